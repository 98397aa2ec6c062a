import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { encodePcm16Wav } from '../../src/audio/wav.js';
import { ScriptedLlm, ScriptedStt, ToneTts } from '../fakes/scripted-providers.js';
import { type CallServer, startCallServer } from '../helpers/call-server.js';
import { PipecatWsClient } from '../helpers/pipecat-ws-client.js';
import { fixturePcm } from '../helpers/room-client.js';
import { TEST_KEY } from '../helpers/test-app.js';

/**
 * Pipecat's own client SDK and websocket transport in headless Chromium, against a real server
 * (room transport, Silero VAD, turn-taking; scripted STT/LLM/TTS). The page is bundled from the
 * installed packages with esbuild and served by this test from its own localhost origin, which
 * the server allows to call bots/start (SWITCHBOARD_CORS_ORIGINS); any request beyond localhost
 * is refused and counted. Chromium's fake microphone plays a fixture
 * recording: quiet through the greeting, a question, then the same words again over the bot's
 * long answer, which interrupts it. Skipped where no Chromium is installed.
 */

const CHROMIUM = [
  process.env.CHROMIUM_PATH,
  '/usr/lib/chromium/chromium',
  '/usr/bin/chromium',
  '/usr/bin/chromium-browser',
].find((path): path is string => path !== undefined && path !== '' && existsSync(path));

const GREETING = 'Hello, this is the front desk.';
const LONG_REPLY =
  'We have rooms with a view of the harbour, rooms with a garden terrace, and family suites with two bedrooms, ' +
  'and every stay includes breakfast, parking, and late checkout on Sundays if you ask at the desk.';
const ANSWER = 'Yes, the canoe is ready for you at the dock.';
const HEARD = 'a birch canoe slid on the smooth planks';
/** ToneTts speaks 40 ms per character; the transport's player runs at 24 kHz. */
const TONE_MS_PER_CHAR = 40;
const PLAYER_RATE_HZ = 24000;

/** The microphone: 4 s quiet (the greeting), the question, 3 s quiet (the long answer starts), the question again, quiet. */
function microphoneWav(dir: string): string {
  const rateHz = 48000;
  const speech = fixturePcm('A06_birch_canoe.8k.wav', rateHz);
  const quiet = (secs: number) => new Int16Array(rateHz * secs);
  const parts = [quiet(4), speech, quiet(3), speech, quiet(8)];
  const samples = new Int16Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const part of parts) {
    samples.set(part, at);
    at += part.length;
  }
  const path = join(dir, 'microphone.wav');
  writeFileSync(path, encodePcm16Wav(samples, rateHz));
  return path;
}

/** The front-end's own web server, on localhost: the page and its bundle. */
async function serveFrontEnd(bundle: string): Promise<{ origin: string; close(): Promise<void> }> {
  const http = createServer((request, response) => {
    if (request.url === '/app.js') {
      response.writeHead(200, { 'content-type': 'text/javascript' }).end(bundle);
    } else if (request.url === '/') {
      response
        .writeHead(200, { 'content-type': 'text/html' })
        .end('<!doctype html><title>Pipecat SDK</title><script src="/app.js"></script>');
    } else {
      response.writeHead(404).end();
    }
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const { port } = http.address() as AddressInfo;
  return { origin: `http://localhost:${port}`, close: () => new Promise((resolve) => http.close(() => resolve())) };
}

interface SdkEvent {
  type: string;
  data: Record<string, any> | null;
  botSamples: number;
}

async function sdkEvents(page: Page): Promise<SdkEvent[]> {
  return (await page.evaluate(
    () => (globalThis as unknown as { sdkTest: { events: unknown[] } }).sdkTest.events,
  )) as SdkEvent[];
}

async function untilEvent(
  page: Page,
  what: string,
  predicate: (events: SdkEvent[]) => boolean,
  timeoutMs = 20_000,
): Promise<SdkEvent[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const events = await sdkEvents(page);
    if (predicate(events)) return events;
    if (Date.now() > deadline)
      throw new Error(`timed out waiting for ${what}; got ${events.map((e) => e.type).join(', ')}`);
    await page.waitForTimeout(100);
  }
}

describe.skipIf(!CHROMIUM)(
  `the Pipecat client SDK in headless Chromium${CHROMIUM ? '' : ' (skipped: no chromium binary found; install Debian chromium or set CHROMIUM_PATH)'}`,
  () => {
    let browser: Browser;
    let bundle: string;
    let server: CallServer | undefined;
    let closeFront: (() => Promise<void>) | undefined;

    beforeAll(async () => {
      const entry = fileURLToPath(new URL('./pipecat-sdk-page.ts', import.meta.url));
      const built = await build({
        entryPoints: [entry],
        bundle: true,
        format: 'iife',
        platform: 'browser',
        target: 'chrome120',
        write: false,
        logLevel: 'silent',
      });
      bundle = built.outputFiles[0]!.text;
      const dir = mkdtempSync(join(tmpdir(), 'switchboard-pipecat-'));
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
      await closeFront?.();
      closeFront = undefined;
    });

    it('startBotAndConnect joins; the greeting plays; transcripts, answers, metrics and an interruption reach the callbacks; disconnectBot ends the room', async () => {
      const stt = new ScriptedStt([HEARD, HEARD]);
      const llm = new ScriptedLlm({ replies: [GREETING, LONG_REPLY, ANSWER] });
      // The front-end lives on its own origin, as a team's would; the server lets it call bots/start.
      const front = await serveFrontEnd(bundle);
      closeFront = front.close;
      server = await startCallServer(
        (registry) => {
          registry
            .registerStt('scripted_stt', () => stt)
            .registerLlm('scripted_llm', () => llm)
            .registerTts('tone_tts', () => new ToneTts());
        },
        { SWITCHBOARD_CORS_ORIGINS: front.origin },
        { publicHost: 'localhost' },
      );
      const origin = server.baseUrl.replace('127.0.0.1', 'localhost');

      const page = await browser.newPage();
      const consoleErrors: string[] = [];
      page.on('console', (message) => {
        if (message.type() === 'error') consoleErrors.push(message.text());
        if (process.env.SDK_DEBUG) console.log('[page]', message.text());
      });
      // Nothing may be fetched from anywhere but localhost.
      const elsewhere: string[] = [];
      await page.route('**/*', async (route) => {
        const url = new URL(route.request().url());
        if (url.hostname === 'localhost') return route.continue();
        elsewhere.push(url.href);
        return route.abort();
      });
      // What bots/start answered the SDK, as it went by.
      const answer = page
        .waitForResponse((response) => response.url().endsWith('/v1/bots/start'))
        .then(async (response) => (await response.json()) as { ws_url: string });
      await page.goto(`${front.origin}/`);

      const outcome = await page.evaluate(
        ([endpoint, key, requestData]) =>
          (
            globalThis as unknown as { sdkTest: { start(e: string, k: string, d: unknown): Promise<string> } }
          ).sdkTest.start(endpoint, key, requestData),
        [
          `${origin}/v1/bots/start`,
          TEST_KEY,
          {
            bot_profile: 'voice_2024_10',
            services: { stt: 'scripted_stt', llm: 'scripted_llm', tts: 'tone_tts' },
            config: [
              { service: 'vad', options: [{ name: 'params', value: { stop_secs: 0.5 } }] },
              { service: 'llm', options: [{ name: 'run_on_config', value: true }] },
            ],
            max_duration: 120,
            transport: 'websocket',
          },
        ] as const,
      );
      expect(outcome).toBe('connected');
      expect(Object.keys(await answer)).toEqual(['ws_url']);

      // The greeting: spoken, handed to the SDK's player in full, and played.
      let events = await untilEvent(page, 'the greeting', (e) => e.some((x) => x.type === 'botStoppedSpeaking'));
      expect(events.filter((e) => e.type === 'botReady')).toHaveLength(1);
      const greetingSamples = events.find((e) => e.type === 'botStoppedSpeaking')!.botSamples;
      expect((greetingSamples / PLAYER_RATE_HZ) * 1000).toBeGreaterThan(GREETING.length * TONE_MS_PER_CHAR * 0.9);
      await expect
        .poll(
          () =>
            page.evaluate(() =>
              (globalThis as unknown as { sdkTest: { playedSamples(): Promise<number> } }).sdkTest.playedSamples(),
            ),
          { timeout: 10_000 },
        )
        .toBeGreaterThan(PLAYER_RATE_HZ / 2);
      expect(
        events
          .filter((e) => e.type === 'botLlmText')
          .map((e) => e.data!.text)
          .join(''),
      ).toBe(GREETING);

      // The question, heard from the microphone: the user's transcript, then the long answer.
      events = await untilEvent(
        page,
        'the user transcript',
        (e) => e.some((x) => x.type === 'userTranscript' && x.data!.final === true),
        30_000,
      );
      expect(events.find((e) => e.type === 'userTranscript' && e.data!.final)!.data).toMatchObject({
        text: HEARD,
        final: true,
      });
      events = await untilEvent(page, 'metrics', (e) => e.some((x) => x.type === 'metrics'));
      expect(events.find((e) => e.type === 'metrics')!.data!.turnLatencyMs).toBeGreaterThan(0);

      // The same words over the long answer interrupt it: the user starts speaking while the bot
      // talks, and the bot stops before it has said much of it.
      events = await untilEvent(
        page,
        'the interruption',
        (e) => e.filter((x) => x.type === 'botStoppedSpeaking').length >= 2,
        30_000,
      );
      const longStart = events.filter((e) => e.type === 'botStartedSpeaking')[1]!;
      const cut = events.filter((e) => e.type === 'botStoppedSpeaking')[1]!;
      const between = events.slice(events.indexOf(longStart), events.indexOf(cut)).map((e) => e.type);
      expect(between).toContain('userStartedSpeaking');
      expect(((cut.botSamples - longStart.botSamples) / PLAYER_RATE_HZ) * 1000).toBeLessThan(
        LONG_REPLY.length * TONE_MS_PER_CHAR * 0.8,
      );

      // The answer to the interrupting words, as the bot's transcript.
      events = await untilEvent(
        page,
        'the answer',
        (e) => e.some((x) => x.type === 'botTranscript' && x.data!.text === ANSWER),
        30_000,
      );
      expect(llm.requests[2]!.messages.at(-1)).toEqual({ role: 'user', content: HEARD });
      // The context keeps only what was heard of the long answer.
      const heard = llm.requests[2]!.messages.find((m) => m.role === 'assistant' && m.content !== GREETING)!.content;
      expect(heard.length).toBeLessThan(LONG_REPLY.length);

      // disconnectBot: the bot leaves and the room ends; its address is refused from then on.
      await page.evaluate(() =>
        (globalThis as unknown as { sdkTest: { disconnectBot(): void } }).sdkTest.disconnectBot(),
      );
      await expect.poll(() => stt.closed, { timeout: 10_000 }).toBe(1);
      // The SDK sees the server close the socket, as when a Pipecat bot leaves, and disconnects.
      events = await untilEvent(page, 'the SDK disconnecting', (e) => e.some((x) => x.type === 'disconnected'));
      expect(JSON.stringify(events.filter((e) => e.type === 'error').map((e) => e.data))).toContain('Code: 1000');
      const late = await PipecatWsClient.connect((await answer).ws_url);
      expect(await late.untilClosed()).toEqual({ code: 4404, reason: 'room not found or has closed' });

      expect(elsewhere).toEqual([]);
      expect(consoleErrors.filter((e) => /deserialize|Unrecognized connection parameter/i.test(e))).toEqual([]);
      await page.close();
    });

    it('a function neither webhook nor built in is asked of the client: registerFunctionCallHandler answers, and the bot runs again with its result', async () => {
      const stt = new ScriptedStt([HEARD, HEARD]);
      const llm = new ScriptedLlm({
        replies: [GREETING, { calls: [{ name: 'check_table', arguments: { party: 4 }, id: 'call_room_1' }] }, ANSWER],
      });
      const front = await serveFrontEnd(bundle);
      closeFront = front.close;
      server = await startCallServer(
        (registry) => {
          registry
            .registerStt('scripted_stt', () => stt)
            .registerLlm('scripted_llm', () => llm)
            .registerTts('tone_tts', () => new ToneTts());
        },
        { SWITCHBOARD_CORS_ORIGINS: front.origin },
        { publicHost: 'localhost' },
      );
      const origin = server.baseUrl.replace('127.0.0.1', 'localhost');
      const page = await browser.newPage();
      await page.goto(`${front.origin}/`);
      await page.evaluate(() =>
        (
          globalThis as unknown as { sdkTest: { registerFunction(n: string, r: unknown): void } }
        ).sdkTest.registerFunction('check_table', { free: true, table: 12 }),
      );
      const tool = {
        type: 'function',
        function: {
          name: 'check_table',
          description: 'Whether a table is free',
          parameters: { type: 'object', properties: { party: { type: 'number' } } },
        },
      };
      const outcome = await page.evaluate(
        ([endpoint, key, requestData]) =>
          (
            globalThis as unknown as { sdkTest: { start(e: string, k: string, d: unknown): Promise<string> } }
          ).sdkTest.start(endpoint, key, requestData),
        [
          `${origin}/v1/bots/start`,
          TEST_KEY,
          {
            bot_profile: 'voice_2024_10',
            services: { stt: 'scripted_stt', llm: 'scripted_llm', tts: 'tone_tts' },
            config: [
              { service: 'vad', options: [{ name: 'params', value: { stop_secs: 0.5 } }] },
              {
                service: 'llm',
                options: [
                  { name: 'run_on_config', value: true },
                  { name: 'tools', value: [tool] },
                ],
              },
            ],
            max_duration: 120,
            transport: 'websocket',
          },
        ] as const,
      );
      expect(outcome).toBe('connected');

      // The question makes the model call check_table; the SDK hands it to the registered handler.
      const events = await untilEvent(
        page,
        'the function call',
        (e) => e.some((x) => x.type === 'functionCall'),
        40_000,
      );
      expect(events.filter((e) => e.type === 'functionCall').map((e) => e.data)).toEqual([
        { functionName: 'check_table', arguments: { party: 4 } },
      ]);
      // The handler's answer is the function's result in the model's next pass, and the answer is spoken.
      await untilEvent(
        page,
        'the answer',
        (e) => e.some((x) => x.type === 'botTranscript' && x.data!.text === ANSWER),
        30_000,
      );
      expect(llm.requests[1]!.tools).toEqual([tool]);
      const messages = llm.requests[2]!.messages;
      expect(messages.find((m) => m.role === 'assistant' && m.toolCalls)).toMatchObject({
        toolCalls: [{ id: 'call_room_1', name: 'check_table', argumentsJson: '{"party":4}' }],
      });
      const result = messages.find((m) => m.role === 'tool')!;
      expect(result).toMatchObject({ toolCallId: 'call_room_1', toolName: 'check_table' });
      expect(JSON.parse(result.content)).toEqual({ free: true, table: 12 });
      await page.close();
    });
  },
);
