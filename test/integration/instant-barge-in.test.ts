import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { readMulawFile } from '../../src/tools/simulator/clip-file.js';
import type { CallReport } from '../../src/tools/simulator/call-report.js';
import { runPhoneCall } from '../../src/tools/simulator/phone-call.js';
import { ScriptedLlm, ScriptedStt, ToneTts } from '../fakes/scripted-providers.js';
import { type CallServer, startCallServer } from '../helpers/call-server.js';

/**
 * Stop on suspicion, over real sockets with real Silero: the bot goes quiet at the first windows
 * of plausible speech, a burst that is not speech lets the reply resume from the first unheard
 * word with nothing lost, real speech is a barge-in, and `mode: confirmed` talks on until the
 * speech is confirmed. The voice streams at real time, so the reply is still being made when it pauses.
 */

const fixture = (name: string) => fileURLToPath(new URL(`../../fixtures/audio/${name}`, import.meta.url));

const SYSTEM = 'You are the front desk of a small hotel.';
const QUESTION = 'the birch canoe';
const FOLLOW_UP = 'go forward ten meters';
/**
 * Two sentences, the first 3 s long: the caller speaks over it 1 to 1.5 s in, while it is still
 * being made. What follows is heard whole after a resume, so it is short.
 */
const REPLY = 'We have rooms with a view of the harbour and rooms with a garden terrace. Breakfast is included.';
const MS_PER_CHAR = 40;

let server: CallServer | undefined;

afterEach(async () => {
  await server?.close();
  server = undefined;
});

/**
 * The caller's question: "the birch canoe", the first 1.2 s of the sentence, up to its first
 * pause. Its length is not the subject, and the caller says it in real time.
 */
async function question(): Promise<Uint8Array> {
  return (await readMulawFile(fixture('A06_birch_canoe.ulaw'))).slice(0, 1200 * 8);
}

/** `ms` of audio from `clip` starting at `fromMs`: a burst too short to be confirmed as speech (start_secs is 0.2 s). */
async function burst(clip: string, fromMs: number, ms: number): Promise<Uint8Array> {
  return (await readMulawFile(fixture(clip))).slice(fromMs * 8, (fromMs + ms) * 8);
}

interface CallOptions {
  /** Entries of the configuration's `interruption` service. */
  interruption?: Array<{ name: string; value: unknown }>;
  /** What the STT hears at each of the caller's turns, in order. */
  heard: string[];
  /** The caller's lines: played in order, the first before the reply, the others `overReplyAtMs` into it (then after it). */
  over: { mulaw: Uint8Array };
  overReplyAtMs: number;
  /**
   * After the bot is done, the caller asks again (default), so the next request shows what the
   * context kept of the reply; a test that checks only the turn over the reply ends there.
   */
  askAgain?: boolean;
}

/** The caller asks, talks (or clatters) over the answer, waits for the bot to finish, and (unless told not to) asks again. */
async function call(options: CallOptions) {
  const stt = new ScriptedStt(options.heard);
  const llm = new ScriptedLlm({ replies: [REPLY, 'Of course.'] });
  const tts = new ToneTts(MS_PER_CHAR, 20, undefined, 0, { realTime: true });
  server = await startCallServer(
    (registry) => {
      registry
        .registerStt('scripted_stt', () => stt)
        .registerLlm('scripted_llm', () => llm)
        .registerTts('tone_tts', () => tts);
    },
    {},
    { captureLogs: true },
  );
  const config: Array<Record<string, unknown>> = [
    { service: 'llm', options: [{ name: 'initial_messages', value: [{ role: 'system', content: SYSTEM }] }] },
  ];
  if (options.interruption) config.push({ service: 'interruption', options: options.interruption });
  const { wssUrl } = await server.createConfig({
    services: { stt: 'scripted_stt', llm: 'scripted_llm', tts: 'tone_tts' },
    config,
  });
  const report = await runPhoneCall({
    target: { wssUrl },
    clips: {
      question: { mulaw: await question() },
      over: options.over,
      // "go forward", up to the clip's first pause: the next question's length is not the subject either.
      forward: { mulaw: (await readMulawFile(fixture('A07_go_forward.ulaw'))).slice(400 * 8, 1200 * 8) },
    },
    scenario: {
      steps: [
        { do: 'play', clip: 'question' },
        { do: 'wait-bot-audio', thenMs: options.overReplyAtMs },
        { do: 'play', clip: 'over' },
        { do: 'wait-bot-silence', ms: 800, timeoutMs: 20_000 },
        ...(options.askAgain === false
          ? []
          : [
              { do: 'play', clip: 'forward' } as const,
              { do: 'wait-bot-audio' } as const,
              { do: 'wait-bot-silence', ms: 600 } as const,
            ]),
      ],
    },
  });
  const summary = await server.waitForLog((r) => r.msg === 'call ended');
  return { report, llm, tts, summary };
}

/** Audio the voice made for the first reply: each piece lasts MS_PER_CHAR a character, in 100 ms chunks. */
function replyAudioMs(tts: ToneTts): number {
  const pieces = tts.pieces.slice(
    0,
    tts.pieces.findIndex((p) => p.startsWith('Of course')),
  );
  return pieces.reduce((ms, piece) => ms + Math.ceil(Math.max(100, piece.length * MS_PER_CHAR) / 100) * 100, 0);
}

function assistantTurnBeforeFollowUp(llm: ScriptedLlm): string {
  expect(llm.requests).toHaveLength(2);
  const messages = llm.requests[1]!.messages;
  expect(messages.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'user']);
  return messages[2]!.content;
}

const clearsDuringReply = (report: CallReport) => report.metrics.clears.length;

describe('a burst that is not speech (instant mode, the default)', () => {
  it.each([
    // The fixtures hold no cough: short cuts of speech stand in for one (plausible to the VAD, never confirmed).
    ['a clipped syllable, 120 ms', 'A07_go_forward.ulaw', 500, 120],
    ["another speaker's clipped word onset, 150 ms", 'A01_jfk.ulaw', 300, 150],
  ])(
    '%s: the bot stops at once, then resumes from the unheard word, and nothing is lost',
    async (_what, clip, fromMs, ms) => {
      const { report, llm, tts, summary } = await call({
        heard: [QUESTION, FOLLOW_UP],
        over: { mulaw: await burst(clip, fromMs, ms) },
        overReplyAtMs: 1500,
      });

      expect(report.outcome).toBe('completed');
      // It stopped: the carrier was cleared while the reply played …
      expect(clearsDuringReply(report)).toBeGreaterThanOrEqual(1);
      expect(summary).toMatchObject({ pauses: 1, resumes: 1, bargeIns: 0 });
      // … and resumed: the caller heard the whole reply (what was cleared was sent again).
      expect(report.metrics.bot.playedAudioMs).toBeGreaterThanOrEqual(replyAudioMs(tts) - 20);
      // The burst was not a turn, and the reply is in the context whole.
      expect(assistantTurnBeforeFollowUp(llm)).toBe(REPLY);
      expect(llm.requests[1]!.messages[3]).toEqual({ role: 'user', content: FOLLOW_UP });
    },
  );
});

describe('real speech over the bot (instant mode)', () => {
  it('stops the bot, is confirmed as a barge-in, and cuts the context to what was heard', async () => {
    const forward = await readMulawFile(fixture('A07_go_forward.ulaw'));
    const { report, llm, summary } = await call({
      heard: [QUESTION, FOLLOW_UP],
      over: { mulaw: forward },
      overReplyAtMs: 1500,
      // Only the turn over the reply is checked: its request holds the cut context.
      askAgain: false,
    });

    expect(report.outcome).toBe('completed');
    expect(report.metrics.utterances[1]!.bargeIn).toBe(true);
    expect(report.metrics.utterances[1]!.bargeInLatencyMs).not.toBeNull();
    expect(summary).toMatchObject({ pauses: 1, resumes: 0, bargeIns: 1 });
    const messages = llm.requests[1]!.messages;
    expect(messages.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'user']);
    const heard = messages[2]!.content.replace(/…$/, '');
    expect(heard.length).toBeGreaterThan(0);
    expect(REPLY.startsWith(heard)).toBe(true);
    expect(heard.length).toBeLessThan(REPLY.length);
  });

  it("summarises when the pause was decided on the caller's audio clock, which the caller's own clock matches", async () => {
    const forward = await readMulawFile(fixture('A07_go_forward.ulaw'));
    const { report, summary } = await call({
      heard: [QUESTION, FOLLOW_UP],
      over: { mulaw: forward },
      overReplyAtMs: 1500,
      // Only the turn over the reply is checked: its request holds the cut context.
      askAgain: false,
    });

    const over = report.metrics.utterances[1]!;
    expect(over.firstVoicedAudioMs).not.toBeNull();
    const records = summary.suspicions as Array<{ atAudioMs: number; outcome: string; lagMs: number | null }>;
    // The pause over the reply, then speech-start, both on the words of the interruption: the
    // VAD's clock (from when the call was ready) and the caller's (from its first frame) agree.
    const paused = records.find((r) => r.outcome === 'paused');
    const started = records.find((r) => r.outcome === 'speech-start' && r.atAudioMs > over.startAudioMs!);
    expect(paused).toBeDefined();
    expect(started).toBeDefined();
    expect(paused!.atAudioMs).toBeGreaterThan(over.startAudioMs!);
    expect(paused!.atAudioMs).toBeLessThan(over.firstVoicedAudioMs! + 200);
    // start_secs (0.2 s) after the pause at the earliest, in audio time.
    expect(started!.atAudioMs - paused!.atAudioMs).toBeGreaterThanOrEqual(160);
    expect(paused!.lagMs).not.toBeNull();
    expect(paused!.lagMs!).toBeGreaterThanOrEqual(0);
  });
});

describe('a backchannel under the natural-conversation turn policy', () => {
  it('"mm-hmm" over the bot pauses it at most: the reply resumes and is not cancelled', async () => {
    // The caller's "mm-hmm" is real speech (VAD confirms it); only its words tell it apart.
    const mmHmm = (await readMulawFile(fixture('A07_go_forward.ulaw'))).slice(400 * 8, 1100 * 8);
    const { report, llm, tts, summary } = await call({
      interruption: [{ name: 'turn_policy', value: 'natural_conversation' }],
      heard: [QUESTION, 'mm-hmm', FOLLOW_UP],
      over: { mulaw: mmHmm },
      overReplyAtMs: 1000,
    });

    expect(report.outcome).toBe('completed');
    expect(summary).toMatchObject({ bargeIns: 0, resumes: 1 });
    expect(report.metrics.bot.playedAudioMs).toBeGreaterThanOrEqual(replyAudioMs(tts) - 20);
    expect(assistantTurnBeforeFollowUp(llm)).toBe(REPLY);
  });
});

describe('mode: confirmed (the behaviour before instant stops)', () => {
  it('a burst that is not speech never stops the bot', async () => {
    const { report, llm, summary } = await call({
      interruption: [{ name: 'mode', value: 'confirmed' }],
      heard: [QUESTION, FOLLOW_UP],
      over: { mulaw: await burst('A07_go_forward.ulaw', 500, 120) },
      overReplyAtMs: 1500,
    });

    expect(report.outcome).toBe('completed');
    expect(clearsDuringReply(report)).toBe(0);
    expect(summary).toMatchObject({ pauses: 0, resumes: 0, bargeIns: 0 });
    expect(assistantTurnBeforeFollowUp(llm)).toBe(REPLY);
  });
});
