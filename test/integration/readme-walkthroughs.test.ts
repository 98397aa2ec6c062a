import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseWav } from '../../src/audio/wav.js';
import { requireBuilt } from '../helpers/built-cli.js';
import { freePort } from '../helpers/call-server.js';
import { type ShellBlock, checkoutLookalike, runScript, shellBlocks, substitute } from '../helpers/readme-blocks.js';
import { TEST_KEY, removeDir, tempDataDir } from '../helpers/test-app.js';

/**
 * The README's shell blocks, run as printed: each walk-through is pasted into bash in a copy of
 * the checkout, with only the ports (8080, 9090, 3000 may be busy here) and the API key
 * placeholder replaced. Every ```sh block of the README belongs to one of these runs, so a block
 * added without being run fails the first test.
 */

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const README = readFileSync(join(ROOT, 'README.md'), 'utf8');
const BLOCKS = shellBlocks(README);
const SCRIPT_TIMEOUT_MS = 150_000;

function blocksIn(section: string): ShellBlock[] {
  const found = BLOCKS.filter((b) => b.section === section);
  if (found.length === 0) throw new Error(`the README has no sh block under "${section}"`);
  return found;
}

/** The one block of a section (a section with several is named by index). */
function block(section: string, index = 0): ShellBlock {
  const found = blocksIn(section)[index];
  if (!found) throw new Error(`the README has no sh block ${index} under "${section}"`);
  return found;
}

const QUICK_START = 'Quick start';
const OFFLINE = 'A whole call, offline';
const ROOMS = 'Rooms: a bot in the browser';
const RECORDINGS = 'Call recordings';
const CALL_RECORDS = 'Call records';
const DIAL_IN = 'Try it with no carrier account';
const DIAL_OUT = 'Dial-out';
const LOADTEST = 'Load testing and the benchmark';
const BOOKING = 'Try it: a bot that books a table';

const dirs: string[] = [];

// `npm start` runs the built server: the project's global setup built dist/ before the first test
// file started (test/helpers/built-cli.ts).
beforeAll(() => requireBuilt());

afterAll(() => {
  for (const dir of dirs.splice(0)) removeDir(dir);
});

/** Runs README blocks in one shell, as one reader following them in order on a fresh machine. */
async function follow(parts: string[], awaitOutput?: RegExp) {
  // A checkout of its own: the walk-throughs run at the same time and write files (bot.wav) there.
  const cwd = checkoutLookalike(ROOT);
  dirs.push(cwd);
  const ports = { 8080: await freePort(), 9090: await freePort(), 3000: await freePort() };
  const dataDir = tempDataDir();
  dirs.push(dataDir);
  const script = parts.map((part) => substitute(part, { ports, apiKey: TEST_KEY })).join('\n');
  const run = await runScript(script, {
    cwd,
    timeoutMs: SCRIPT_TIMEOUT_MS,
    awaitOutput,
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '',
      // The server's port and store: what the reader's machine has by default, moved aside.
      PORT: String(ports[8080]),
      SWITCHBOARD_DATA_DIR: dataDir,
      SWITCHBOARD_API_KEY: TEST_KEY,
    },
  });
  return { ...run, ports, script, cwd };
}

/**
 * The quick start's first command after `npm ci` (which CI has run), as if in a second terminal:
 * in its own process group, so the reader's Ctrl-C (`stopQuickStartServer`) reaches the server.
 */
function quickStartServer(port: string): string {
  const serve = block(QUICK_START).text.split('\n')[0]!;
  const match = /^npm ci && (npm start)\b/.exec(serve);
  if (!match) throw new Error(`the quick start's first line is not "npm ci && npm start": ${serve}`);
  return [
    `set -m; ${match[1]} & QUICK_START=$!; set +m`,
    `trap 'kill -INT -- -$QUICK_START 2>/dev/null' EXIT`,
    `until curl -sf localhost:${port}/healthz >/dev/null; do sleep 0.2; done`,
  ].join('\n');
}

const stopQuickStartServer = 'kill -INT -- -$QUICK_START; wait $QUICK_START || true';

/** Log lines at error level or worse: a walk-through as printed must not produce any. */
function errorLogLines(output: string): string[] {
  return output.split('\n').filter((line) => /^\{"level":(50|60)\b/.test(line));
}

function isWav(path: string): boolean {
  return (
    existsSync(path) && statSync(path).size > 44 && readFileSync(path).subarray(0, 4).toString('latin1') === 'RIFF'
  );
}

/** Seconds of loud samples in a WAV file: what a listener hears of the voice, not the silence. */
function loudSeconds(path: string): number {
  const wav = parseWav(new Uint8Array(readFileSync(path)));
  let loud = 0;
  for (const sample of wav.samples) if (Math.abs(sample) > 1000) loud += 1;
  return loud / wav.sampleRateHz;
}

function explain(run: { code: number | null; output: string; script: string }): string {
  return `script:\n${run.script}\n\nexit ${run.code}, output:\n${run.output}`;
}

// The walk-throughs are independent readers on machines of their own (own ports, data, checkout),
// but run one at a time: the dial-out's simulated callee talks in real time, and beside the quick
// start's load test it once never finished its call on a two-core machine.
describe('the README, executed', () => {
  it('every sh block belongs to a walk-through this file runs, and CI runs the quick start test command', () => {
    const covered = new Set([
      QUICK_START,
      OFFLINE,
      ROOMS,
      RECORDINGS,
      CALL_RECORDS,
      DIAL_IN,
      DIAL_OUT,
      LOADTEST,
      BOOKING,
    ]);
    const uncovered = BLOCKS.filter((b) => !covered.has(b.section)).map((b) => `line ${b.line} (${b.section})`);
    expect(uncovered).toEqual([]);
    const [serve, test] = block(QUICK_START)
      .text.split('\n')
      .map((line) => line.replace(/\s+#.*$/, '').trim());
    expect(serve).toBe('npm ci && npm start');
    const ci = readFileSync(join(ROOT, '.ci/run'), 'utf8')
      .split('\n')
      .map((line) => line.trim());
    expect(ci).toContain('npm ci');
    expect(ci).toContain(test);
  });

  it('quick start, offline call, rooms, recordings, call records and load test, in order', {
    timeout: SCRIPT_TIMEOUT_MS + 30_000,
  }, async () => {
    const run = await follow([
      quickStartServer('8080'),
      block(QUICK_START, 1).text,
      // The reader stops the quick start's server (Ctrl-C) before starting it against the emulators.
      stopQuickStartServer,
      block(OFFLINE).text,
      block(ROOMS).text,
      block(RECORDINGS).text,
      block(CALL_RECORDS).text,
      block(LOADTEST).text,
    ]);
    const context = explain(run);
    expect(run.code, context).toBe(0);
    expect(errorLogLines(run.output), context).toEqual([]);
    // The configuration was created, and read back by its id.
    const created = /"id":"([0-9a-f-]{36})","wssUrl":"ws:\/\/localhost:\d+\/ws\/twilio\/\1"/.exec(run.output);
    expect(created, context).not.toBeNull();
    expect(run.output.split(created![0]).length, context).toBeGreaterThanOrEqual(3);
    // The offline call: greeting, the fixture, and an answer to it, written to bot.wav.
    expect(run.output, context).toMatch(/utterance 1 "A06_birch_canoe.8k": .*reply latency \d+ ms/);
    expect(isWav(join(run.cwd, 'bot.wav')), context).toBe(true);
    // Greeting and answer: well over a second of the bot's voice on the call's timeline.
    expect(loudSeconds(join(run.cwd, 'bot.wav')), context).toBeGreaterThan(1);
    expect(run.output, context).toMatch(/"room_url":"http:\/\/localhost:\d+\/rooms\/[\w-]+","token":"v1\./);
    // The recording of that call, downloaded through its access link.
    expect(isWav(join(run.cwd, 'call.wav')), context).toBe(true);
    // Its call record: who ended it, each answer's breakdown, the transcript as WebVTT, the page's link.
    expect(run.output, context).toMatch(/"outcome": "caller_hung_up"/);
    expect(run.output, context).toMatch(
      /\{"kind":"answer","response_ms":\d+,"vad_stop_ms":\d+,"stt_final_ms":\d+,"llm_first_token_ms":\d+/,
    );
    expect(run.output, context).toMatch(/WEBVTT\n\n1\n\d\d:\d\d:\d\d\.\d{3} --> .*\n<v (Bot|Caller)>/);
    expect(run.output, context).toMatch(/<v Caller>[^<]+<\/v>/);
    expect(run.output, context).toMatch(/http:\/\/localhost:\d+\/calls-page#token=swpage\./);
    // The load test's calls were answered.
    expect(run.output, context).toMatch(/calls: 5, ok 5, failed 0/);
    expect(run.output, context).toMatch(/reply latency:\s+p50 \d+/);
  });

  it('dial-in with no carrier account, then dial-out', { timeout: SCRIPT_TIMEOUT_MS + 30_000 }, async () => {
    // The dial-out's simulated callee answers, listens, replies twice and hangs up after the script.
    const run = await follow([block(DIAL_IN).text, block(DIAL_OUT).text], /sandbox callee hung up/);
    const context = explain(run);
    expect(run.code, context).toBe(0);
    expect(errorLogLines(run.output), context).toEqual([]);
    // The example receiver checked the webhook's signature and started the bot for this call.
    expect(run.output, context).toMatch(/call from \+15555550100 to \+14155550123: bots\/start answered 200/);
    // The dial-in caller was put through to a bot that greeted and answered.
    expect(run.output, context).toMatch(/utterance 1 "A06_birch_canoe.8k": .*reply latency \d+ ms/);
    // The dialled callee heard the bot and got answers to both of its replies.
    expect(run.output, context).toMatch(
      /"calleeTurns":2,"replyLatenciesMs":\[\d+,\d+\],"msg":"sandbox callee hung up"/,
    );
  });

  it('a bot that books a table through the example receiver', { timeout: SCRIPT_TIMEOUT_MS + 30_000 }, async () => {
    const run = await follow([block(BOOKING).text]);
    const context = explain(run);
    expect(run.code, context).toBe(0);
    expect(errorLogLines(run.output), context).toEqual([]);
    // The model's call reached the receiver, signed, and booked: its own log line says so.
    expect(run.output, context).toMatch(/^booked T1001: 2 at 19:00 for Ada$/m);
    expect(run.output, context).not.toMatch(/refused a request with a bad or missing signature/);
    // The caller heard an answer after the function's result, and the server counted the call.
    expect(run.output, context).toMatch(/utterance 1 "A06_birch_canoe.8k": .*reply latency \d+ ms/);
    expect(run.output, context).toMatch(/^switchboard_tool_calls_total\{tool="book_table",result="ok"\} 1$/m);
    expect(run.output, context).toMatch(/"tool":"book_table","toolCallId":"[^"]+","outcome":"ok"/);
    // The phone simulator saw it on the media stream too.
    expect(run.output, context).toMatch(/function calls: 1 \(book_table ×1\); ok 1/);
  });
});
