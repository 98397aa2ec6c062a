import { existsSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type Browser, chromium } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { encodePcm16Wav } from '../../src/audio/wav.js';
import { ScriptedLlm, ScriptedStt, ToneTts } from '../fakes/scripted-providers.js';
import { type CallServer, startCallServer } from '../helpers/call-server.js';
import { fixturePcm } from '../helpers/room-client.js';
import { TEST_KEY } from '../helpers/test-data.js';

/**
 * The room page in real headless Chromium: its fake microphone plays a fixture recording, the
 * page joins with the token from the URL fragment, and the bot (real room transport, Silero VAD,
 * turn-taking; scripted STT/LLM/TTS) greets and answers. Skipped where no Chromium is installed
 * (CI installs Debian's chromium; see .ci/run).
 */

const CHROMIUM = [
  process.env.CHROMIUM_PATH,
  '/usr/lib/chromium/chromium',
  '/usr/bin/chromium',
  '/usr/bin/chromium-browser',
].find((path): path is string => path !== undefined && path !== '' && existsSync(path));
const ARTIFACTS = fileURLToPath(new URL('../../test-artifacts/', import.meta.url));

const GREETING = 'Hello, this is the front desk.';
const ANSWER = 'Yes, the canoe is ready for you at the dock.';
const HEARD = 'a birch canoe slid on the smooth planks';

/** The microphone's recording: quiet while the bot greets, the fixture sentence, then quiet. */
function microphoneWav(dir: string): string {
  const rateHz = 48000;
  const speech = fixturePcm('A06_birch_canoe.8k.wav', rateHz);
  const samples = new Int16Array(rateHz * 4 + speech.length + rateHz * 4);
  samples.set(speech, rateHz * 4);
  const path = join(dir, 'microphone.wav');
  writeFileSync(path, encodePcm16Wav(samples, rateHz));
  return path;
}

describe.skipIf(!CHROMIUM)(
  `the room page in headless Chromium${CHROMIUM ? '' : ' (skipped: no chromium binary found; install Debian chromium or set CHROMIUM_PATH)'}`,
  () => {
    let browser: Browser;
    let server: CallServer | undefined;

    beforeAll(async () => {
      const dir = mkdtempSync(join(tmpdir(), 'switchboard-browser-'));
      browser = await chromium.launch({
        executablePath: CHROMIUM,
        args: [
          '--use-fake-ui-for-media-stream',
          '--use-fake-device-for-media-stream',
          `--use-file-for-fake-audio-capture=${microphoneWav(dir)}%noloop`,
          '--autoplay-policy=no-user-gesture-required',
        ],
      });
    });

    afterAll(async () => {
      await browser?.close();
    });

    afterEach(async () => {
      await server?.close();
      server = undefined;
    });

    async function startBot(profile: string) {
      const stt = new ScriptedStt([HEARD, HEARD]);
      const llm = new ScriptedLlm({ replies: [GREETING, ANSWER] });
      server = await startCallServer((registry) => {
        registry
          .registerStt('scripted_stt', () => stt)
          .registerLlm('scripted_llm', () => llm)
          .registerTts('tone_tts', () => new ToneTts());
      });
      const res = await fetch(`${server.baseUrl}/v1/bots/start`, {
        method: 'POST',
        headers: { authorization: `Bearer ${TEST_KEY}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          bot_profile: profile,
          services: { stt: 'scripted_stt', llm: 'scripted_llm', tts: 'tone_tts' },
          config: [
            { service: 'vad', options: [{ name: 'params', value: { stop_secs: 0.5 } }] },
            { service: 'llm', options: [{ name: 'run_on_config', value: true }] },
          ],
          max_duration: 120,
        }),
      });
      expect(res.status).toBe(200);
      const { room_url, token } = (await res.json()) as { room_url: string; token: string };
      return { llm, url: `${room_url}#${token}` };
    }

    it('connects, plays the greeting, sends the microphone, and shows the answer and both transcripts', async () => {
      const { url } = await startBot('voice_2024_10');
      const page = await browser.newPage();
      const consoleErrors: string[] = [];
      page.on('console', (message) => {
        if (message.type() === 'error') consoleErrors.push(message.text());
      });
      await page.goto(url);
      await page.locator('#status', { hasText: 'is ready' }).waitFor({ timeout: 15_000 });
      // The token left the address bar once the page had it.
      expect(page.url()).not.toContain('#');
      await page.locator('.line.bot', { hasText: GREETING }).waitFor({ timeout: 15_000 });
      await page.locator('.line.user:not(.interim)', { hasText: HEARD }).waitFor({ timeout: 20_000 });
      await page.locator('.line.bot', { hasText: ANSWER }).waitFor({ timeout: 15_000 });
      await page.locator('#latency', { hasText: /^last turn/ }).waitFor({ timeout: 10_000 });
      // The page's script answers through a function (its CSP forbids evaluating strings).
      const state = (await page.evaluate(() =>
        (globalThis as unknown as { switchboardRoom: { state(): unknown } }).switchboardRoom.state(),
      )) as {
        joined: boolean;
        sampleRateHz: number;
        botAudioChunks: number;
        latencies: number[];
      };
      expect(state.joined).toBe(true);
      expect([16000, 48000]).toContain(state.sampleRateHz);
      expect(state.latencies.length).toBe(1);
      // The bot's audio reached the page and was scheduled for playback (20 ms chunks).
      expect(state.botAudioChunks).toBeGreaterThan(50);

      mkdirSync(ARTIFACTS, { recursive: true });
      await page.screenshot({ path: join(ARTIFACTS, 'room-page.png'), fullPage: true });

      await page.click('#mute');
      expect(await page.textContent('#mute')).toBe('Unmute');
      await page.click('#leave');
      await page.locator('#status', { hasText: /^disconnected/ }).waitFor({ timeout: 5000 });
      expect(consoleErrors).toEqual([]);
      await page.close();
    });

    it('turns the camera on for a vision profile and gives the LLM the latest frame with the user turn', async () => {
      const { url, llm } = await startBot('vision_2024_10');
      const page = await browser.newPage();
      await page.goto(url);
      await page.locator('.line.bot', { hasText: ANSWER }).waitFor({ timeout: 30_000 });
      expect(await page.locator('#camera').isVisible()).toBe(true);
      const lastUser = llm.requests[1]!.messages.at(-1)!;
      expect(lastUser.role).toBe('user');
      expect(lastUser.content).toBe(HEARD);
      // A JPEG (base64 of FF D8 FF) from Chromium's fake camera.
      expect(lastUser.imageBase64).toMatch(/^\/9j\//);
      mkdirSync(ARTIFACTS, { recursive: true });
      await page.screenshot({ path: join(ARTIFACTS, 'room-page-vision.png'), fullPage: true });
      await page.close();
    });
  },
);
