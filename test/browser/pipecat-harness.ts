/**
 * What the browser tests of Pipecat's client SDK share, whichever transport they drive: Chromium
 * with a fake microphone playing a script, the page bundled from the installed packages and
 * served from its own localhost origin, a server with scripted STT, LLM and TTS that lets that
 * origin call bots/start (`scriptedSuite` sets them up per test), the page calling bots/start
 * (`startBot`), and the page's `globalThis.sdkTest` (its callbacks' events) read back.
 */
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll } from 'vitest';
import { encodePcm16Wav } from '../../src/audio/wav.js';
import { ScriptedLlm, ScriptedStt, ToneTts } from '../fakes/scripted-providers.js';
import { type CallServer, startCallServer } from '../helpers/call-server.js';
import { fixturePcm } from '../helpers/room-client.js';
import { TEST_KEY } from '../helpers/test-data.js';

/** Debian's chromium (or CHROMIUM_PATH); undefined where none is installed, and the tests skip. */
export const CHROMIUM = [
  process.env.CHROMIUM_PATH,
  '/usr/lib/chromium/chromium',
  '/usr/bin/chromium',
  '/usr/bin/chromium-browser',
].find((path): path is string => path !== undefined && path !== '' && existsSync(path));

/** Appended to a skipped suite's name, so the run says why. */
export const SKIP_NOTE = CHROMIUM
  ? ''
  : ' (skipped: no chromium binary found; install Debian chromium or set CHROMIUM_PATH)';

/** The bot's script: a greeting, a long answer the caller interrupts, and the answer to the interruption. */
export const GREETING = 'Hello, this is the front desk.';
export const LONG_REPLY =
  'We have rooms with a view of the harbour, rooms with a garden terrace, and family suites with two bedrooms, ' +
  'and every stay includes breakfast, parking, and late checkout on Sundays if you ask at the desk.';
export const ANSWER = 'Yes, the canoe is ready for you at the dock.';
/** What the scripted STT hears each time the caller speaks. */
export const HEARD = 'a birch canoe slid on the smooth planks';
/** ToneTts speaks 40 ms per character. */
export const TONE_MS_PER_CHAR = 40;

/**
 * Chromium whose microphone plays, once: `leadSecs` of quiet (the greeting), the question, `gapSecs`
 * of quiet (the long answer starts), the question again over it, then `tailSecs` of quiet.
 */
export async function launchWithMicrophone(quiet: {
  leadSecs: number;
  gapSecs: number;
  tailSecs: number;
}): Promise<Browser> {
  const rateHz = 48000;
  const speech = fixturePcm('A06_birch_canoe.8k.wav', rateHz);
  const silence = (secs: number) => new Int16Array(rateHz * secs);
  const parts = [silence(quiet.leadSecs), speech, silence(quiet.gapSecs), speech, silence(quiet.tailSecs)];
  const samples = new Int16Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const part of parts) {
    samples.set(part, at);
    at += part.length;
  }
  const wav = join(mkdtempSync(join(tmpdir(), 'switchboard-pipecat-')), 'microphone.wav');
  writeFileSync(wav, encodePcm16Wav(samples, rateHz));
  return chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--use-fake-ui-for-media-stream',
      '--use-fake-device-for-media-stream',
      `--use-file-for-fake-audio-capture=${wav}%noloop`,
      '--autoplay-policy=no-user-gesture-required',
    ],
  });
}

/** The page at `entry` (beside this file), bundled for the browser from the installed packages. */
export async function bundlePage(entry: string): Promise<string> {
  const built = await build({
    entryPoints: [fileURLToPath(new URL(entry, import.meta.url))],
    bundle: true,
    format: 'iife',
    platform: 'browser',
    target: 'chrome120',
    write: false,
    logLevel: 'silent',
  });
  return built.outputFiles[0]!.text;
}

/** The front-end's own web server, on localhost: the page and its bundle. */
export async function serveFrontEnd(
  bundle: string,
  title: string,
): Promise<{ origin: string; close(): Promise<void> }> {
  const http = createServer((request, response) => {
    if (request.url === '/app.js') {
      response.writeHead(200, { 'content-type': 'text/javascript' }).end(bundle);
    } else if (request.url === '/') {
      response
        .writeHead(200, { 'content-type': 'text/html' })
        .end(`<!doctype html><title>${title}</title><script src="/app.js"></script>`);
    } else {
      response.writeHead(404).end();
    }
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const { port } = http.address() as AddressInfo;
  return { origin: `http://localhost:${port}`, close: () => new Promise((resolve) => http.close(() => resolve())) };
}

export interface ScriptedCall {
  server: CallServer;
  /** The server's address by host name, as a front-end would use it. */
  origin: string;
  stt: ScriptedStt;
  llm: ScriptedLlm;
}

/** A server speaking the script (`replies`, or the greeting, long answer and answer), open to `frontOrigin`. */
export async function startScriptedServer(
  frontOrigin: string,
  replies: ConstructorParameters<typeof ScriptedLlm>[0]['replies'] = [GREETING, LONG_REPLY, ANSWER],
): Promise<ScriptedCall> {
  const stt = new ScriptedStt([HEARD, HEARD]);
  const llm = new ScriptedLlm({ replies });
  const server = await startCallServer(
    (registry) => {
      registry
        .registerStt('scripted_stt', () => stt)
        .registerLlm('scripted_llm', () => llm)
        .registerTts('tone_tts', () => new ToneTts());
    },
    { SWITCHBOARD_CORS_ORIGINS: frontOrigin },
    { publicHost: 'localhost' },
  );
  return { server, origin: server.baseUrl.replace('127.0.0.1', 'localhost'), stt, llm };
}

/**
 * bots/start's body for the scripted server over `transport`: its STT, LLM and TTS, a VAD that
 * ends the turn after 0.5 s of quiet, and the greeting at once; `llmOptions` adds to the LLM's.
 */
export function scriptedStartBody(
  transport: 'websocket' | 'webrtc',
  llmOptions: Array<{ name: string; value: unknown }> = [],
): Record<string, unknown> {
  return {
    bot_profile: 'voice_2024_10',
    services: { stt: 'scripted_stt', llm: 'scripted_llm', tts: 'tone_tts' },
    config: [
      { service: 'vad', options: [{ name: 'params', value: { stop_secs: 0.5 } }] },
      { service: 'llm', options: [{ name: 'run_on_config', value: true }, ...llmOptions] },
    ],
    max_duration: 120,
    transport,
  };
}

export interface ScriptedSuite {
  /** Chromium, launched once for the suite. */
  browser(): Browser;
  /** The front-end on its own origin and a scripted server open to it, both closed after the test. */
  start(replies?: Parameters<typeof startScriptedServer>[1]): Promise<ScriptedCall & { frontOrigin: string }>;
}

/**
 * Registers the hooks of a suite of scripted calls from the page `page` (beside this file): the
 * page bundled and Chromium launched once (its microphone as `launchWithMicrophone`'s `quiet`),
 * and each test's front-end and server closed after it. Call it inside the suite's `describe`.
 */
export function scriptedSuite(options: {
  page: string;
  title: string;
  quiet: Parameters<typeof launchWithMicrophone>[0];
}): ScriptedSuite {
  let browser: Browser | undefined;
  let bundle: string;
  let server: CallServer | undefined;
  let closeFront: (() => Promise<void>) | undefined;

  beforeAll(async () => {
    bundle = await bundlePage(options.page);
    browser = await launchWithMicrophone(options.quiet);
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

  return {
    browser: () => browser!,
    async start(replies) {
      const front = await serveFrontEnd(bundle, options.title);
      closeFront = front.close;
      const started = await startScriptedServer(front.origin, replies);
      server = started.server;
      return { ...started, frontOrigin: front.origin };
    },
  };
}

/** A new page whose console errors are kept (and printed with SDK_DEBUG set). */
export async function watchedPage(browser: Browser): Promise<{ page: Page; consoleErrors: string[] }> {
  const page = await browser.newPage();
  const consoleErrors: string[] = [];
  page.on('console', (message) => {
    if (message.type() === 'error') consoleErrors.push(message.text());
    if (process.env.SDK_DEBUG) console.log('[page]', message.text());
  });
  return { page, consoleErrors };
}

/**
 * Refuses every request beyond localhost and returns the list of those refused. Playwright runs
 * the last route added first: added after the test's own routes, this one sees requests first
 * and passes those for localhost on to them.
 */
export async function keepToLocalhost(page: Page): Promise<string[]> {
  const elsewhere: string[] = [];
  await page.route('**/*', async (route) => {
    const url = new URL(route.request().url());
    if (url.hostname === 'localhost') return route.fallback();
    elsewhere.push(url.href);
    return route.abort();
  });
  return elsewhere;
}

/** An event the page's SDK callbacks recorded, as the tests read it. */
export interface SdkEvent {
  type: string;
  data: Record<string, any> | null;
}

/** The SmallWebRTC page's events (pipecat-webrtc-page.ts): how much of the bot had been heard, and when, ms. */
export interface WebRtcSdkEvent extends SdkEvent {
  heardMs: number;
  atMs: number;
}

/** Runs the expression `body` in the page, with `t` its `globalThis.sdkTest` (e.g. `t.heardMs()`). */
export function sdk<T>(page: Page, body: string): Promise<T> {
  return page.evaluate(`(async (t) => (${body}))(globalThis.sdkTest)`) as Promise<T>;
}

/**
 * Has the front-end open in `page` call startBotAndConnect with `body` at `endpoint` (a bots/start
 * URL): the SDK's outcome ('connected' or 'failed: …') and the answer bots/start gave it, as it
 * went by.
 */
export async function startBot(
  page: Page,
  endpoint: string,
  body: Record<string, unknown>,
): Promise<{ outcome: string; answer: Record<string, any> }> {
  const answer = page
    // Not the CORS preflight's 204: the answer itself.
    .waitForResponse((response) => response.url().endsWith('/v1/bots/start') && response.status() !== 204)
    .then(async (response) => (await response.json()) as Record<string, any>);
  const outcome = await page.evaluate(
    ([endpoint, key, body]) =>
      (
        globalThis as unknown as { sdkTest: { start(e: string, k: string, d: unknown): Promise<string> } }
      ).sdkTest.start(endpoint, key, body),
    [endpoint, TEST_KEY, body] as const,
  );
  return { outcome, answer: await answer };
}

/** The events the page's SDK callbacks recorded (`globalThis.sdkTest.events`), once `predicate` holds. */
export async function untilEvent<E extends { type: string }>(
  page: Page,
  what: string,
  predicate: (events: E[]) => boolean,
  timeoutMs = 20_000,
): Promise<E[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const events = (await page.evaluate(
      () => (globalThis as unknown as { sdkTest: { events: unknown[] } }).sdkTest.events,
    )) as E[];
    if (predicate(events)) return events;
    if (Date.now() > deadline)
      throw new Error(`timed out waiting for ${what}; got ${events.map((e) => e.type).join(', ')}`);
    await page.waitForTimeout(100);
  }
}
