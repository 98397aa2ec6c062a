import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type Browser, type Page, chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WATERFALL_COLOURS } from '../../src/records/page/calls-page.js';
import { readMulawFile } from '../../src/tools/simulator/clip-file.js';
import { runPhoneCall } from '../../src/tools/simulator/phone-call.js';
import { ScriptedLlm, ScriptedStt, ToneTts } from '../fakes/scripted-providers.js';
import { type CallServer, startCallServer } from '../helpers/call-server.js';
import { TEST_KEY } from '../helpers/test-data.js';

/**
 * The calls page in real headless Chromium, over a real call with a barge-in: sign in with the
 * key, the list shows the call with its outcome, its view shows the transcript beside a waterfall
 * whose stages are drawn (checked on a screenshot of the canvas), the recording is playable, and
 * a signed link opens the page without the key. The transcript's WebVTT is validated by
 * Chromium's own parser (a <track>'s VTTCues).
 */

const CHROMIUM = [
  process.env.CHROMIUM_PATH,
  '/usr/lib/chromium/chromium',
  '/usr/bin/chromium',
  '/usr/bin/chromium-browser',
].find((path): path is string => path !== undefined && path !== '' && existsSync(path));
const ARTIFACTS = fileURLToPath(new URL('../../test-artifacts/', import.meta.url));
const fixture = (name: string) => fileURLToPath(new URL(`../../fixtures/audio/${name}`, import.meta.url));

const REPLY =
  'We have rooms with a view of the harbour and rooms with a garden terrace. Every stay includes breakfast and parking.';

/** Pixels of the screenshot (a PNG, base64) within a small distance of each colour, counted by Chromium itself. */
async function colourCounts(
  page: Page,
  pngBase64: string,
  colours: Record<string, string>,
): Promise<Record<string, number>> {
  return page.evaluate(
    async ({ png, wanted }) => {
      const image = new Image();
      image.src = `data:image/png;base64,${png}`;
      await image.decode();
      const canvas = document.createElement('canvas');
      canvas.width = image.width;
      canvas.height = image.height;
      const g = canvas.getContext('2d')!;
      g.drawImage(image, 0, 0);
      const { data } = g.getImageData(0, 0, canvas.width, canvas.height);
      const targets = Object.entries(wanted).map(([name, hex]) => ({
        name,
        rgb: [1, 3, 5].map((i) => Number.parseInt(hex.slice(i, i + 2), 16)),
      }));
      const counts: Record<string, number> = Object.fromEntries(targets.map((t) => [t.name, 0]));
      for (let i = 0; i < data.length; i += 4) {
        for (const t of targets) {
          if (
            Math.abs(data[i]! - t.rgb[0]!) + Math.abs(data[i + 1]! - t.rgb[1]!) + Math.abs(data[i + 2]! - t.rgb[2]!) <
            24
          )
            counts[t.name]! += 1;
        }
      }
      return counts;
    },
    { png: pngBase64, wanted: colours },
  );
}

describe.skipIf(!CHROMIUM)(
  `the calls page in headless Chromium${CHROMIUM ? '' : ' (skipped: no chromium binary found; install Debian chromium or set CHROMIUM_PATH)'}`,
  { timeout: 90_000 },
  () => {
    let browser: Browser;
    let server: CallServer;
    let callId: string;

    beforeAll(async () => {
      const stt = new ScriptedStt(['the birch canoe slid on the smooth planks', 'go forward ten meters']);
      const llm = new ScriptedLlm({ replies: [REPLY, 'Of course.'] });
      server = await startCallServer((registry) => {
        registry
          .registerStt('scripted_stt', () => stt)
          .registerLlm('scripted_llm', () => llm)
          .registerTts('tone_tts', () => new ToneTts(65, 20, undefined, 0, { realTime: true }));
      });
      const { wssUrl } = await server.createConfig({
        services: { stt: 'scripted_stt', llm: 'scripted_llm', tts: 'tone_tts' },
        config: [
          { service: 'llm', options: [{ name: 'initial_messages', value: [{ role: 'system', content: 'A hotel.' }] }] },
        ],
        recording_settings: { type: 'cloud' },
      });
      await runPhoneCall({
        target: { wssUrl },
        clips: {
          birch: { mulaw: await readMulawFile(fixture('A06_birch_canoe.ulaw')) },
          forward: { mulaw: await readMulawFile(fixture('A07_go_forward.ulaw')) },
        },
        scenario: {
          steps: [
            { do: 'play', clip: 'birch' },
            { do: 'wait-bot-audio', thenMs: 1500 },
            { do: 'play', clip: 'forward' },
            { do: 'wait-bot-audio' },
            { do: 'wait-bot-silence', ms: 600 },
          ],
        },
      });
      const headers = { authorization: `Bearer ${TEST_KEY}` };
      for (let i = 0; ; i++) {
        const list = (await (await fetch(`${server.baseUrl}/v1/calls`, { headers })).json()) as {
          data: Array<{ id: string; status: string; recording_id: string }>;
        };
        const recording = list.data[0]
          ? ((await (
              await fetch(`${server.baseUrl}/v1/recordings/${list.data[0].recording_id}`, { headers })
            ).json()) as {
              status: string;
            })
          : undefined;
        if (list.data[0]?.status === 'ended' && recording?.status === 'finished') {
          callId = list.data[0].id;
          break;
        }
        if (i > 200) throw new Error('no ended call record');
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      browser = await chromium.launch({
        executablePath: CHROMIUM,
        args: [
          '--headless',
          '--no-sandbox',
          '--disable-gpu',
          '--disable-background-networking',
          '--disable-component-update',
          '--disable-sync',
          '--no-first-run',
          '--autoplay-policy=no-user-gesture-required',
        ],
      });
    });

    afterAll(async () => {
      await browser?.close();
      await server?.close();
    });

    it('signs in with the key, lists the call, and draws its transcript beside the waterfall with the barge-in marked', async () => {
      const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
      const requests: string[] = [];
      page.on('request', (r) => requests.push(r.url()));
      await page.goto(`${server.baseUrl}/calls-page`);
      await page.locator('#key').fill(TEST_KEY);
      await page.locator('#login-form button').click();

      const row = page.locator(`tr[data-call="${callId}"]`);
      await row.waitFor();
      expect(await row.locator('.outcome').textContent()).toBe('caller_hung_up');
      expect(await row.textContent()).toContain('phone');
      // The key is kept for the tab only.
      expect(await page.evaluate(() => sessionStorage.length)).toBe(1);
      expect(await page.evaluate(() => document.cookie)).toBe('');

      await row.click();
      await page.locator('#call[data-loaded="true"]').waitFor();
      const entries = page.locator('#transcript .entry');
      expect(await entries.count()).toBe(4);
      expect(await entries.nth(0).textContent()).toContain('the birch canoe slid on the smooth planks');
      expect(await page.locator('#transcript .bot .cut').count()).toBe(1);
      expect(await page.locator('#waterfall').getAttribute('data-turns')).toBe('2');
      await page.waitForFunction(() => {
        const audio = document.querySelector('#recording') as HTMLAudioElement;
        return !audio.hidden && audio.readyState >= 1;
      });
      expect(
        await page.evaluate(() => (document.querySelector('#recording') as HTMLAudioElement).duration),
      ).toBeGreaterThan(3);

      // The waterfall is drawn: a screenshot of it holds every stage's colour, and the barge-in's.
      const shot = await page.locator('#waterfall').screenshot();
      const counts = await colourCounts(page, shot.toString('base64'), WATERFALL_COLOURS);
      console.log(`waterfall pixels by stage: ${JSON.stringify(counts)}`);
      for (const stage of ['vad', 'llm', 'tts', 'speaking', 'interruption'] as const)
        expect(counts[stage], stage).toBeGreaterThan(20);
      mkdirSync(ARTIFACTS, { recursive: true });
      await page.screenshot({ path: join(ARTIFACTS, 'calls-page.png'), fullPage: true });
      // Nothing was fetched from anywhere but this server.
      expect(requests.filter((url) => !url.startsWith(server.baseUrl) && !url.startsWith('data:'))).toEqual([]);
      await page.close();
    });

    it('opens from a signed link without the key, read-only', async () => {
      const link = (await (
        await fetch(`${server.baseUrl}/v1/calls/page-link`, { headers: { authorization: `Bearer ${TEST_KEY}` } })
      ).json()) as { url: string };
      const context = await browser.newContext();
      const page = await context.newPage();
      await page.goto(link.url);
      await page.locator(`tr[data-call="${callId}"]`).waitFor();
      // The token left the address bar once kept.
      expect(page.url()).toBe(`${server.baseUrl}/calls-page`);
      await context.close();
    });

    it('serves WebVTT that Chromium’s own parser reads as one VTTCue per transcript entry, in its speaker’s voice', async () => {
      const headers = { authorization: `Bearer ${TEST_KEY}` };
      const vtt = await (await fetch(`${server.baseUrl}/v1/calls/${callId}/transcript.vtt`, { headers })).text();
      const json = (await (await fetch(`${server.baseUrl}/v1/calls/${callId}/transcript`, { headers })).json()) as {
        entries: Array<{ speaker: string; text: string; start_ms: number; end_ms: number }>;
      };
      const page = await browser.newPage();
      const cues = await page.evaluate(async (text) => {
        const video = document.createElement('video');
        const track = document.createElement('track');
        track.kind = 'subtitles';
        track.src = URL.createObjectURL(new Blob([text], { type: 'text/vtt' }));
        track.default = true;
        video.appendChild(track);
        document.body.appendChild(video);
        track.track.mode = 'hidden';
        await new Promise<void>((resolve, reject) => {
          track.addEventListener('load', () => resolve());
          track.addEventListener('error', () => reject(new Error('Chromium refused the WebVTT')));
        });
        return Array.from(track.track.cues ?? []).map((cue) => {
          const c = cue as VTTCue;
          const fragment = c.getCueAsHTML();
          return {
            isVttCue: c instanceof VTTCue,
            start: c.startTime,
            end: c.endTime,
            text: c.text,
            spoken: fragment.textContent,
            voice: (fragment.firstChild as HTMLElement | null)?.getAttribute?.('title') ?? null,
          };
        });
      }, vtt);
      await page.close();
      expect(cues).toHaveLength(json.entries.length);
      cues.forEach((cue, i) => {
        const entry = json.entries[i]!;
        expect(cue.isVttCue).toBe(true);
        expect(cue.start).toBeCloseTo(entry.start_ms / 1000, 3);
        expect(cue.end).toBeCloseTo(Math.max(entry.end_ms, entry.start_ms + 1) / 1000, 3);
        expect(cue.spoken).toBe(entry.text);
        expect(cue.voice).toBe(entry.speaker === 'caller' ? 'Caller' : 'Bot');
      });
    });
  },
);
