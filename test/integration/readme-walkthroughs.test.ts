import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  BLOCKS,
  BOOKING,
  CALL_RECORDS,
  DIAL_IN,
  DIAL_OUT,
  LOADTEST,
  OFFLINE,
  QUICK_START,
  RECORDINGS,
  ROOMS,
  ROOT,
  SCRIPT_TIMEOUT_MS,
  block,
  errorLogLines,
  explain,
  isWav,
  loudSeconds,
  quickStartServer,
  readmeWalkthroughs,
  stopQuickStartServer,
} from '../helpers/readme-walkthrough.js';

/**
 * The README's shell blocks, run as printed (test/helpers/readme-walkthrough.ts): the quick start
 * with what follows it, and the booking bot, here; the dial-in and dial-out walk-through in
 * `readme-dial-walkthroughs.test.ts`, so the two files run beside each other. Every ```sh block of
 * the README belongs to one of these runs, so a block added without being run fails the first test.
 */

const follow = readmeWalkthroughs();

// The walk-throughs are independent readers on machines of their own (own ports, data, checkout).
// Within a file they run one at a time.
describe('the README, executed', () => {
  it('every sh block belongs to a walk-through these files run, and CI runs the quick start test command', () => {
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
