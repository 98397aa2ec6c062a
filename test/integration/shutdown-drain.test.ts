import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { parseWav } from '../../src/audio/wav.js';
import { CartesiaEmulator } from '../../src/tools/emulators/cartesia-emulator.js';
import { DeepgramEmulator } from '../../src/tools/emulators/deepgram-emulator.js';
import { speechDurationMs } from '../../src/tools/emulators/emulator-kit.js';
import { type RunningEmulators, startEmulatorServer } from '../../src/tools/emulators/emulator-server.js';
import { OpenAiEmulator } from '../../src/tools/emulators/openai-emulator.js';
import { PHRASES } from '../../src/pipeline/call-deps.js';
import type { CallReport, TimelineEvent } from '../../src/tools/simulator/call-report.js';
import type { CallerClip } from '../../src/tools/simulator/caller-clip.js';
import { readMulawFile } from '../../src/tools/simulator/clip-file.js';
import { PhoneCall } from '../../src/tools/simulator/phone-call.js';
import type { Scenario } from '../../src/tools/simulator/scenario.js';
import { CLOSE } from '../../src/shared/close-codes.js';
import { freePort } from '../helpers/free-port.js';
import { startServeProcess } from '../helpers/cli-process.js';
import { TEST_KEY, removeDir, sampleConfig, tempDataDir } from '../helpers/test-data.js';

/**
 * SIGTERM with calls in progress, against `switchboard serve` as a real process: the vendors are
 * the emulators (in this process), the caller is the phone simulator. A draining server refuses
 * new work, lets live calls finish, says goodbye at the drain limit, and exits 0.
 */

const fixture = (name: string) => fileURLToPath(new URL(`../../fixtures/audio/${name}`, import.meta.url));
const FAST = {
  sttFinalDelayMs: 50,
  llmFirstTokenMs: 50,
  llmTokensPerSec: 200,
  ttsFirstByteMs: 30,
  ttsRealTimeFactor: 4,
};
// Short: most calls wait for the greeting to end before they go on, and the emulated voice lasts
// 60 ms a character in real time; no test is about the greeting's length.
const GREETING = 'Harbour hotel, how can I help?';
const ANSWER = 'We have a room with a view for you tonight.';

let emulators: RunningEmulators | undefined;
const children: ChildProcess[] = [];
const dirs: string[] = [];

afterEach(async () => {
  for (const child of children.splice(0)) {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL');
      await once(child, 'exit');
    }
  }
  await emulators?.close();
  emulators = undefined;
  for (const dir of dirs.splice(0)) removeDir(dir);
});

interface Served {
  child: ChildProcess;
  baseUrl: string;
  dataDir: string;
  cartesia: CartesiaEmulator;
  output: () => string;
  exited: Promise<number | null>;
}

async function serve(env: Record<string, string>): Promise<Served> {
  const cartesia = new CartesiaEmulator({ latencies: FAST });
  emulators = await startEmulatorServer([
    new DeepgramEmulator({ latencies: FAST, transcripts: ['do you have a room', 'for tonight', 'for two people'] }),
    new OpenAiEmulator({ latencies: FAST, replies: [GREETING, ANSWER] }),
    cartesia,
  ]);
  const dataDir = tempDataDir();
  dirs.push(dataDir);
  // The TwiML names the public URL, so the server needs a known port.
  const port = await freePort();
  const server = await startServeProcess({
    PORT: String(port),
    SWITCHBOARD_PUBLIC_URL: `http://127.0.0.1:${port}`,
    SWITCHBOARD_DATA_DIR: dataDir,
    SWITCHBOARD_API_KEY: TEST_KEY,
    SWITCHBOARD_DEEPGRAM_URL: emulators.url,
    SWITCHBOARD_OPENAI_URL: emulators.url,
    SWITCHBOARD_CARTESIA_URL: emulators.url,
    ...env,
  });
  children.push(server.child);
  const exited = once(server.child, 'exit').then(([code]) => code as number | null);
  return { child: server.child, baseUrl: server.baseUrl, dataDir, cartesia, output: server.output, exited };
}

async function createConfig(baseUrl: string, overrides: Record<string, unknown> = {}): Promise<string> {
  const res = await fetch(`${baseUrl}/v1/bots/twilio-config`, {
    method: 'POST',
    headers: { authorization: `Bearer ${TEST_KEY}`, 'content-type': 'application/json' },
    body: JSON.stringify(sampleConfig(overrides)),
  });
  expect(res.status).toBe(200);
  return ((await res.json()) as { id: string }).id;
}

/** A phone call through the voice webhook; `events` sees each timeline event as it happens. */
function phoneCall(
  baseUrl: string,
  id: string,
  scenario: Scenario,
  clips: Record<string, CallerClip>,
  onEvent: (e: TimelineEvent) => void = () => undefined,
) {
  const call = new PhoneCall({ target: { webhookUrl: `${baseUrl}/twilio/voice/${id}` }, scenario, clips, onEvent });
  return { call, report: call.run() };
}

/** Timeline events as they happen; `next` resolves with the first of a kind (after `afterMs`, when given). */
function eventWaiter() {
  const seen: TimelineEvent[] = [];
  const waiters: Array<{ match: (e: TimelineEvent) => boolean; resolve: (e: TimelineEvent) => void }> = [];
  return {
    onEvent(event: TimelineEvent) {
      seen.push(event);
      for (const w of [...waiters]) {
        if (w.match(event)) {
          waiters.splice(waiters.indexOf(w), 1);
          w.resolve(event);
        }
      }
    },
    next(kind: TimelineEvent['kind'], afterMs = -Infinity): Promise<TimelineEvent> {
      const match = (e: TimelineEvent) => e.kind === kind && e.atMs > afterMs;
      const found = seen.find(match);
      if (found) return Promise.resolve(found);
      return new Promise((resolve) => waiters.push({ match, resolve }));
    },
  };
}

async function healthStatus(baseUrl: string): Promise<number> {
  return (await fetch(`${baseUrl}/healthz`)).status;
}

/** Waits until the server answers /healthz with 503: it has taken the signal and is draining. */
async function untilDraining(baseUrl: string): Promise<void> {
  for (;;) {
    if ((await healthStatus(baseUrl)) === 503) return;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/** The recording rows and files the server left in its data dir, read without starting a server (which would repair them). */
function recordingsOnDisk(dataDir: string) {
  const db = new Database(join(dataDir, 'switchboard.sqlite'), { readonly: true });
  try {
    const rows = db
      .prepare('select id, account_id, status, duration_secs, tracks_json from recordings')
      .all() as Array<{
      id: string;
      account_id: string;
      status: string;
      duration_secs: number | null;
      tracks_json: string | null;
    }>;
    return rows.map((row) => {
      const path = join(dataDir, 'recordings', row.account_id, row.id, 'mixed.wav');
      return { ...row, mixed: existsSync(path) ? parseWav(new Uint8Array(readFileSync(path))) : undefined };
    });
  } finally {
    db.close();
  }
}

/** Stretches of bot audio that started at or after `atMs`. */
function botSegmentsAfter(report: CallReport, atMs: number): number {
  return report.timeline.filter((e) => e.kind === 'bot-audio-start' && e.atMs >= atMs).length;
}

// Each test starts two processes and a real-time call: on a busy machine that takes a while.
describe('SIGTERM drains the server', { timeout: 120_000 }, () => {
  it('lets a call in progress go on: its reply completes, new calls are refused, and the process exits 0 when the caller hangs up', async () => {
    // A drain limit far beyond the test: the process must exit because the call ended, not because time ran out.
    const server = await serve({ SWITCHBOARD_DRAIN_TIMEOUT_SECS: '600' });
    const id = await createConfig(server.baseUrl);
    const question = { mulaw: await readMulawFile(fixture('A06_birch_canoe.8k.wav')) };
    const events = eventWaiter();
    const { call, report } = phoneCall(
      server.baseUrl,
      id,
      {
        steps: [
          { do: 'wait-bot-silence', ms: 600 },
          { do: 'play', clip: 'question' },
          { do: 'wait-bot-silence', ms: 600 },
        ],
        endOfScript: 'stay',
      },
      { question },
      (e) => events.onEvent(e),
    );

    // The greeting is playing when the signal comes.
    await events.next('bot-audio-start');
    server.child.kill('SIGTERM');
    await untilDraining(server.baseUrl);

    // New work is refused while the call goes on.
    const webhook = await fetch(`${server.baseUrl}/twilio/voice/${id}`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'CallSid=CA1&From=%2B15551234567&To=%2B15557654321',
    });
    expect(webhook.status).toBe(503);
    const started = await fetch(`${server.baseUrl}/v1/bots/start`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TEST_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        bot_profile: 'voice_2024_10',
        services: { stt: 'deepgram', llm: 'openai', tts: 'cartesia' },
        api_keys: sampleConfig().api_keys,
      }),
    });
    expect(started.status).toBe(503);
    expect(await started.json()).toEqual({
      error: 'service-unavailable',
      info: expect.stringMatching(/shutting down/),
    });
    const stream = new WebSocket(`${server.baseUrl.replace('http', 'ws')}/ws/twilio/${id}`);
    const [refusedCode] = (await once(stream, 'close')) as [number, Buffer];
    expect(refusedCode).toBe(CLOSE.goingAway);

    // The greeting plays to its end, the caller asks, the bot answers: a whole turn during the drain.
    const greetingEnd = await events.next('bot-audio-end');
    const answerEnd = await events.next('bot-audio-end', greetingEnd.atMs);
    expect(await healthStatus(server.baseUrl)).toBe(503);
    expect(server.child.exitCode).toBeNull();

    call.hangup();
    const result = await report;
    expect(await server.exited).toBe(0);

    expect(result.outcome).toBe('completed');
    expect(result.close?.by).toBe('caller');
    expect(result.metrics.clears).toHaveLength(0);
    // All of the greeting and the answer reached the caller (the emulated voice lasts 60 ms a character).
    const spokenMs = speechDurationMs(GREETING) + speechDurationMs(ANSWER);
    expect(result.metrics.bot.receivedAudioMs).toBeGreaterThanOrEqual(spokenMs - 100);
    expect(answerEnd.atMs).toBeGreaterThan(greetingEnd.atMs);
    expect(server.output()).toMatch(/"msg":"draining: new calls are refused/);
  });

  it('at the drain limit the bot says goodbye, the call closes with 1001, its recording is finalised, and the process exits 0', async () => {
    const server = await serve({ SWITCHBOARD_DRAIN_TIMEOUT_SECS: '2' });
    const id = await createConfig(server.baseUrl, { recording_settings: { type: 'cloud' } });
    const events = eventWaiter();
    const { report } = phoneCall(
      server.baseUrl,
      id,
      { steps: [{ do: 'wait-bot-silence', ms: 300 }], endOfScript: 'stay' },
      {},
      (e) => events.onEvent(e),
    );

    const greetingEnd = await events.next('bot-audio-end');
    server.child.kill('SIGTERM');
    const result = await report;
    expect(await server.exited).toBe(0);

    expect(result.outcome).toBe('server-closed');
    expect(result.close).toMatchObject({ code: CLOSE.goingAway, by: 'server' });
    // The goodbye: a second stretch of bot audio after the greeting, spoken by the configured voice.
    expect(botSegmentsAfter(result, greetingEnd.atMs)).toBeGreaterThanOrEqual(1);
    const spoken = server.cartesia.contexts.flatMap((c) => c.transcripts).join(' ');
    expect(spoken).toContain(PHRASES.shutdown);
    expect(result.metrics.bot.receivedAudioMs).toBeGreaterThanOrEqual(
      speechDurationMs(GREETING) + speechDurationMs(PHRASES.shutdown) - 100,
    );

    const [recording] = recordingsOnDisk(server.dataDir);
    expect(recording?.status).toBe('finished');
    expect(recording?.tracks_json).not.toBeNull();
    // The file covers the call, goodbye included.
    expect(recording!.mixed!.samples.length / 8).toBeGreaterThanOrEqual(
      speechDurationMs(GREETING) + speechDurationMs(PHRASES.shutdown) - 200,
    );
  });

  it('a second signal during the drain ends the calls at once, without a goodbye, and the process exits 0', async () => {
    const server = await serve({ SWITCHBOARD_DRAIN_TIMEOUT_SECS: '600' });
    const id = await createConfig(server.baseUrl, { recording_settings: { type: 'cloud' } });
    const events = eventWaiter();
    const { report } = phoneCall(
      server.baseUrl,
      id,
      { steps: [{ do: 'wait-bot-silence', ms: 300 }], endOfScript: 'stay' },
      {},
      (e) => events.onEvent(e),
    );

    await events.next('bot-audio-end');
    server.child.kill('SIGTERM');
    await untilDraining(server.baseUrl);
    const contextsBefore = server.cartesia.contexts.length;
    server.child.kill('SIGINT');
    const result = await report;
    expect(await server.exited).toBe(0);

    expect(result.close).toMatchObject({ code: CLOSE.goingAway, by: 'server' });
    expect(server.cartesia.contexts.length).toBe(contextsBefore);
    const [recording] = recordingsOnDisk(server.dataDir);
    expect(recording?.status).toBe('finished');
  });

  it('with no call live, SIGTERM exits 0 without waiting for the drain limit', async () => {
    const server = await serve({ SWITCHBOARD_DRAIN_TIMEOUT_SECS: '600' });
    server.child.kill('SIGTERM');
    expect(await server.exited).toBe(0);
  });
});
