import { type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { readMulawFile } from '../../src/tools/simulator/clip-file.js';
import { runPhoneCall } from '../../src/tools/simulator/phone-call.js';
import { ScriptedLlm, ScriptedStt, ToneTts } from '../fakes/scripted-providers.js';
import { endedCallRecord } from '../helpers/call-record-api.js';
import { type CallServer, startCallServer } from '../helpers/call-server.js';

/**
 * A vendor that hangs (takes the request, never answers) must not leave the caller in silence:
 * within the turn deadline of the end of their turn they hear an apology, and retries of the hung
 * request stop at the deadline.
 */

const fixture = (name: string) => fileURLToPath(new URL(`../../fixtures/audio/${name}`, import.meta.url));
const DEADLINE_SECS = 2;

let hung: Server | undefined;
let server: CallServer | undefined;

afterEach(async () => {
  await server?.close();
  server = undefined;
  hung?.closeAllConnections();
  await new Promise<void>((resolve) => (hung ? hung.close(() => resolve()) : resolve()));
  hung = undefined;
});

/** An HTTP vendor that reads each request and never answers it. */
async function startHungVendor(): Promise<{ url: string; requests: () => number }> {
  let requests = 0;
  hung = createServer((req) => {
    requests += 1;
    req.resume();
  });
  await new Promise<void>((resolve) => hung!.listen(0, '127.0.0.1', resolve));
  return { url: `http://localhost:${(hung.address() as AddressInfo).port}`, requests: () => requests };
}

/**
 * The caller hangs up 1.5 s into the apology: that it came, and when, is the subject, not the
 * built-in voice's whole sentence (over 4 s heard in real time).
 */
const HEAR_THE_APOLOGY_BEGIN = { thenMs: 1500, timeoutMs: 20_000 };

const VAD = { service: 'vad', options: [{ name: 'params', value: { stop_secs: 0.3 } }] };

async function clips() {
  return {
    birch: { mulaw: await readMulawFile(fixture('A06_birch_canoe.ulaw')) },
    forward: { mulaw: await readMulawFile(fixture('A07_go_forward.ulaw')) },
  };
}

async function startWithHungLlm(serviceOptions: Record<string, unknown> = {}) {
  const vendor = await startHungVendor();
  const tts = new ToneTts();
  server = await startCallServer(
    (registry) => {
      registry
        .registerStt(
          'scripted_stt',
          () => new ScriptedStt(['the birch canoe slid on the smooth planks', 'go forward ten meters']),
        )
        .registerTts('tone_tts', () => tts);
    },
    { SWITCHBOARD_OPENAI_URL: vendor.url, SWITCHBOARD_TURN_DEADLINE_SECS: String(DEADLINE_SECS) },
    { captureLogs: true },
  );
  const { wssUrl } = await server.createConfig({
    services: { stt: 'scripted_stt', llm: 'openai', tts: 'tone_tts' },
    config: [VAD],
    api_keys: { openai: 'sk-test-0123456789' },
    service_options: { openai: serviceOptions },
  });
  return { vendor, tts, wssUrl };
}

describe('the turn deadline', () => {
  it('a hung LLM: the caller hears an apology within the deadline, and retries stop at it', async () => {
    // Each attempt alone would wait 1.2 s; three attempts and their back-off would take over 4 s.
    const { vendor, tts, wssUrl } = await startWithHungLlm({ timeout_ms: 1200 });
    const report = await runPhoneCall({
      target: { wssUrl },
      clips: await clips(),
      scenario: {
        steps: [
          { do: 'play', clip: 'birch' },
          { do: 'wait-bot-audio', ...HEAR_THE_APOLOGY_BEGIN },
        ],
      },
    });

    expect(report.outcome).toBe('completed');
    const [turn] = report.metrics.utterances;
    expect(turn!.replyLatencyMs).not.toBeNull();
    // The apology is in the built-in voice; the configured one was never asked to speak.
    expect(report.metrics.bot.playedAudioMs).toBeGreaterThan(1000);
    expect(tts.pieces).toEqual([]);
    // The deadline, not the retries running out, brought the apology: the first attempt timed
    // out and the second was abandoned (without a deadline, all three run, over 4 s of them).
    expect(vendor.requests()).toBeGreaterThanOrEqual(1);
    expect(vendor.requests()).toBeLessThan(3);
    const missed = await server!.waitForLog((r) => r.msg?.includes('turn deadline') === true);
    expect(missed).toMatchObject({
      level: 40,
      stage: 'llm',
      provider: 'openai',
      turnDeadlineMs: DEADLINE_SECS * 1000,
    });
    expect(missed.waitedMs as number).toBeGreaterThanOrEqual(DEADLINE_SECS * 1000);
    // In the server's own record: an answer that never spoke, then the apology.
    const record = await endedCallRecord(server!.baseUrl);
    expect(record.turns.map((t) => t.kind)).toEqual(['answer', 'apology']);
    expect(record.turns[0]!.first_frame_sent_ms).toBeUndefined();
    expect(record.turns[1]!.first_frame_sent_ms).toBeDefined();
  }, 60_000);

  it('a hung voice: the reply is abandoned at the deadline and the built-in voice apologises', async () => {
    const tts = new ToneTts(40, 20, undefined, 0, { hangs: true });
    const llm = new ScriptedLlm({ replies: ['A fine canoe it is.'] });
    server = await startCallServer(
      (registry) => {
        registry
          .registerStt('scripted_stt', () => new ScriptedStt(['the birch canoe slid on the smooth planks']))
          .registerLlm('scripted_llm', () => llm)
          .registerTts('tone_tts', () => tts);
      },
      { SWITCHBOARD_TURN_DEADLINE_SECS: String(DEADLINE_SECS) },
      { captureLogs: true },
    );
    const { wssUrl } = await server.createConfig({
      services: { stt: 'scripted_stt', llm: 'scripted_llm', tts: 'tone_tts' },
      config: [VAD],
    });
    const report = await runPhoneCall({
      target: { wssUrl },
      clips: await clips(),
      scenario: {
        steps: [
          { do: 'play', clip: 'birch' },
          { do: 'wait-bot-audio', ...HEAR_THE_APOLOGY_BEGIN },
        ],
      },
    });

    expect(report.outcome).toBe('completed');
    expect(report.metrics.utterances[0]!.replyLatencyMs).not.toBeNull();
    expect(report.metrics.bot.playedAudioMs).toBeGreaterThan(1000);
    // The voice took the answer and never spoke it.
    expect(tts.pieces).toEqual(['A fine canoe it is.']);
    const missed = await server.waitForLog((r) => r.msg?.includes('turn deadline') === true);
    expect(missed).toMatchObject({ level: 40, stage: 'tts', provider: 'tone_tts' });
  }, 60_000);

  it('speaking again while waiting does not restart the clock: the apology comes as soon as the caller stops', async () => {
    const { vendor, wssUrl } = await startWithHungLlm();
    const report = await runPhoneCall({
      target: { wssUrl },
      clips: await clips(),
      scenario: {
        steps: [
          { do: 'play', clip: 'birch' },
          // The caller waits a moment, hears nothing, and speaks again past the deadline.
          { do: 'wait', ms: 700 },
          { do: 'play', clip: 'forward' },
          { do: 'wait-bot-audio', ...HEAR_THE_APOLOGY_BEGIN },
        ],
      },
    });

    expect(report.outcome).toBe('completed');
    const [first, second] = report.metrics.utterances;
    // Nothing was heard before the second turn, and the bot did not talk over it (the clip ends in silence).
    expect(first!.replyLatencyMs).toBeNull();
    expect(report.metrics.firstBotAudioMs!).toBeGreaterThan(second!.lastVoicedMs!);
    expect(second!.replyLatencyMs).not.toBeNull();
    // The second turn came when the caller was already owed an answer: no second wait on the hung model.
    expect(vendor.requests()).toBe(1);
    // The clock kept running from the first turn: the apology went out when the second turn
    // ended, not a whole deadline after it (a restarted clock cannot fire sooner than that), as
    // the server timed the wait from the caller's last voiced frame to its first frame.
    const record = await endedCallRecord(server!.baseUrl);
    const apology = record.turns.find((t) => t.kind === 'apology')!;
    expect(apology.response_ms!).toBeGreaterThan(0);
    expect(apology.response_ms!).toBeLessThan(DEADLINE_SECS * 1000);
  }, 60_000);
});
