import { describe, expect, it } from 'vitest';
import type { CallSummary, TurnTimings } from '../pipeline/call-metrics.js';
import { callOutcome } from './call-outcome.js';
import { type BuiltCallRecord, CallRecordBuilder, wordsHeard } from './call-record-builder.js';
import { transcriptToVtt } from './transcript-vtt.js';

const summary = (over: Partial<CallSummary> = {}): CallSummary => ({
  durationMs: 0,
  turns: 0,
  bargeIns: 0,
  falseAlarms: 0,
  pauses: 0,
  resumes: 0,
  pausedMs: [],
  providerErrors: 0,
  droppedTranscripts: 0,
  tools: {},
  dtmfDigits: 0,
  perTurn: [],
  suspicions: [],
  ...over,
});

function builder(engine: 'pipeline' | 's2s', transcript = true) {
  const clock = { now: 1000 };
  let built: BuiltCallRecord | undefined;
  const b = new CallRecordBuilder({
    callId: 'call-1',
    engine,
    vadStopMs: 800,
    transcript,
    now: () => clock.now,
    onEnded: (record) => {
      built = record;
    },
  });
  return { b, clock, built: () => built! };
}

describe('CallRecordBuilder', () => {
  it('times each stage of an answer from the call’s start, and the caller’s words from the finals', () => {
    const { b, clock, built } = builder('pipeline');
    b.callStarted({ callSid: 'CA1', streamSid: 'MZ1', customParameters: { from: '+15550100001', to: '+15550100002' } });
    clock.now = 2000;
    b.events.onUserSpeaking!(true);
    clock.now = 3000;
    b.events.onUserSpeaking!(false);
    b.events.onUserTranscript!('is there', false);
    clock.now = 3100;
    b.events.onUserTranscript!('is there a table', true);
    clock.now = 3150;
    const timings: TurnTimings = { turn: 1, kind: 'answer', interrupted: false };
    b.replyStarted(timings, 3000, true);
    timings.llmFirstTokenMs = 400;
    b.events.onBotText!('We have one.');
    timings.ttsFirstAudioMs = 600;
    timings.firstFrameSentMs = 610;
    clock.now = 5000;
    b.events.onBotSpeaking!(false);
    clock.now = 6000;
    b.callEnded('stop', false, summary({ turns: 1 }));

    const record = built();
    expect(record).toMatchObject({
      callSid: 'CA1',
      from: '+15550100001',
      to: '+15550100002',
      outcome: 'caller_hung_up',
    });
    expect(record.durationMs).toBe(5000);
    expect(record.turns).toEqual([
      {
        index: 1,
        kind: 'answer',
        engine: 'pipeline',
        caller_last_voiced_ms: 1200,
        vad_stop_ms: 2000,
        stt_final_ms: 2100,
        llm_request_ms: 2150,
        llm_first_token_ms: 2400,
        tts_first_audio_ms: 2600,
        first_frame_sent_ms: 2610,
        ended_ms: 4000,
        response_ms: 1410,
        heard_ms: 1390,
      },
    ]);
    expect(record.transcript).toEqual([
      { speaker: 'caller', text: 'is there a table', start_ms: 1000, end_ms: 2000 },
      { speaker: 'bot', text: 'We have one.', start_ms: 2610, end_ms: 4000 },
    ]);
    expect(record.medianResponseMs).toBe(1410);
  });

  it('an answer that starts in the same millisecond as the VAD stop (finals already complete) keeps its VAD stop and STT final', () => {
    const { b, clock, built } = builder('pipeline');
    b.callStarted({ callSid: 'CA3', streamSid: 'MZ3' });
    clock.now = 2000;
    b.events.onUserSpeaking!(true);
    clock.now = 2900;
    b.events.onUserTranscript!('is there a table', true);
    clock.now = 3000;
    b.events.onUserSpeaking!(false);
    const timings: TurnTimings = { turn: 1, kind: 'answer', interrupted: false };
    b.replyStarted(timings, 3000, true);
    clock.now = 4000;
    b.callEnded('stop', false, summary({ turns: 1 }));
    expect(built().turns[0]).toMatchObject({ vad_stop_ms: 2000, stt_final_ms: 1900, llm_request_ms: 2000 });
  });

  it('speech-to-speech: a cut reply keeps the share of its words the caller heard, and the barge-in’s onset and clear', () => {
    const { b, clock, built } = builder('s2s');
    b.callStarted({ callSid: 'CA2', streamSid: 'MZ2' });
    const timings: TurnTimings = { turn: 1, kind: 'answer', interrupted: false };
    b.replyStarted(timings, 1000, true);
    timings.ttsFirstAudioMs = 300;
    timings.firstFrameSentMs = 310;
    for (const delta of ['Our rooms ', 'look over ', 'the harbour ', 'and the hills.']) b.events.onBotText!(delta);
    clock.now = 2500;
    b.replyPaused();
    clock.now = 2700;
    b.events.onUserSpeaking!(true);
    timings.interrupted = true;
    b.replyCut(timings, 1200, 2400);
    clock.now = 4000;
    b.callEnded('max_duration', true, summary({ turns: 1, bargeIns: 1 }));

    const [turn] = built().turns;
    expect(turn).toMatchObject({ vendor_speech_started_ms: 0, tts_first_audio_ms: 300, first_frame_sent_ms: 310 });
    expect(turn!.interruption).toEqual({ onset_ms: 1500, clear_ms: 1500 });
    expect(built().outcome).toBe('max_duration');
    expect(built().transcript).toEqual([
      { speaker: 'bot', text: 'Our rooms look over the…', start_ms: 310, end_ms: 1700, interrupted: true },
    ]);
  });

  it('keeps no transcript when the configuration says so', () => {
    const { b, built } = builder('pipeline', false);
    b.events.onUserTranscript!('hello', true);
    b.callEnded('stop', false, summary());
    expect(built().transcript).toBeUndefined();
  });
});

describe('the outcome of a call', () => {
  it.each([
    ['stop', false, 0, 'caller_hung_up'],
    ['socket closed (1000)', false, 0, 'caller_hung_up'],
    ['max_duration', true, 0, 'max_duration'],
    ['server shutting down', true, 0, 'drain'],
    ['error', true, 1, 'provider_failure'],
    ['error', true, 0, 'error'],
    ['disconnect-bot', false, 0, 'bot_ended'],
    ['call ended', true, 0, 'bot_ended'],
  ] as const)('%s (our side: %s, provider errors: %i) is %s', (reason, ours, errors, outcome) => {
    expect(callOutcome(reason, ours, errors)).toBe(outcome);
  });
});

describe('wordsHeard and WebVTT', () => {
  it('keeps whole words by their middle, with an ellipsis when cut', () => {
    expect(wordsHeard('one two three four', 0.5)).toBe('one two…');
    expect(wordsHeard('one two three four', 1)).toBe('one two three four');
    expect(wordsHeard('one two', 0)).toBe('');
  });

  it('writes one cue per entry in its speaker’s voice, escaped, and never an empty cue', () => {
    expect(
      transcriptToVtt([
        { speaker: 'caller', text: 'a <b> & c\n\nd', start_ms: 3_723_004, end_ms: 3_723_004 },
        { speaker: 'bot', text: 'ok', start_ms: 0, end_ms: 999 },
      ]),
    ).toBe(
      'WEBVTT\n\n1\n01:02:03.004 --> 01:02:03.005\n<v Caller>a &lt;b&gt; &amp; c d</v>\n\n2\n00:00:00.000 --> 00:00:00.999\n<v Bot>ok</v>\n',
    );
  });
});
