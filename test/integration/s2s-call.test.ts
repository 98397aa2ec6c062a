import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { type RunningEmulators, startEmulatorServer } from '../../src/tools/emulators/emulator-server.js';
import { OpenAiRealtimeEmulator } from '../../src/tools/emulators/openai-realtime-emulator.js';
import { GeminiLiveEmulator } from '../../src/tools/emulators/gemini-live-emulator.js';
import { readMulawFile } from '../../src/tools/simulator/clip-file.js';
import { runPhoneCall } from '../../src/tools/simulator/phone-call.js';
import type { Scenario } from '../../src/tools/simulator/scenario.js';
import { type CallServer, startCallServer } from '../helpers/call-server.js';
import { type Clock, REAL_CLOCK } from '../../src/shared/clock.js';
import { S2S_CALL_CLOCK as CALL_CLOCK, S2S_LATENCIES as FAST, s2sClips as clips } from '../helpers/s2s-phone-call.js';
import { TEST_KEY } from '../helpers/test-data.js';

/**
 * Phone calls on the speech-to-speech profiles, through the real adapters and the vendors'
 * emulated websockets: the caller's audio goes to the model, its audio comes back, and barge-in
 * clears the line and truncates the model's item to what the simulator actually played. Their
 * function calls are s2s-function-calls.test.ts.
 */

const fixture = (name: string) => fileURLToPath(new URL(`../../fixtures/audio/${name}`, import.meta.url));
const GREETING = 'Hello and welcome to the harbour hotel, how may I help you this fine evening?';
const ANSWER = 'We have a lovely room with a view of the harbour for tonight, and breakfast is included in the price.';

let emulators: RunningEmulators | undefined;
let server: CallServer | undefined;

afterEach(async () => {
  await server?.close();
  await emulators?.close();
  server = undefined;
  emulators = undefined;
});

/**
 * The OpenAI Realtime emulator and a server on it, with a bot configured for a phone call: its audio
 * generated at `realTimeFactor` times real time, the call on `clock`.
 */
async function startOpenAi(
  protocol: 'ga' | 'beta' = 'ga',
  realTimeFactor = FAST.ttsRealTimeFactor,
  clock: Clock = CALL_CLOCK,
) {
  const realtime = new OpenAiRealtimeEmulator({
    latencies: { ...FAST, ttsRealTimeFactor: realTimeFactor },
    replies: [GREETING, ANSWER, 'Of course.'],
    transcripts: ['do you have a room'],
  });
  emulators = await startEmulatorServer([realtime]);
  server = await startCallServer(() => undefined, { SWITCHBOARD_OPENAI_URL: emulators.url }, { clock });
  const { wssUrl } = await server.createConfig({
    bot_profile: 'openai_realtime_beta_2024_10',
    services: { llm: 'openai_realtime' },
    config: [
      {
        service: 'llm',
        options: [
          { name: 'initial_messages', value: [{ role: 'system', content: 'You are the front desk of a hotel.' }] },
          { name: 'run_on_config', value: true },
          { name: 'voice', value: 'cedar' },
        ],
      },
    ],
    service_options: protocol === 'beta' ? { openai_realtime: { protocol: 'beta' } } : {},
  });
  return { realtime, wssUrl, clock };
}

async function endedCallRecord(): Promise<any> {
  const headers = { authorization: `Bearer ${TEST_KEY}` };
  for (let i = 0; ; i++) {
    const list = (await (await fetch(`${server!.baseUrl}/v1/calls?status=ended`, { headers })).json()) as {
      data: Array<{ id: string }>;
    };
    if (list.data[0]) return (await fetch(`${server!.baseUrl}/v1/calls/${list.data[0].id}`, { headers })).json();
    if (i > 200) throw new Error('no ended call record');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe('a phone call on the OpenAI Realtime profile', () => {
  it('greets, answers the caller, and configures the session for mu-law both ways', async () => {
    const { realtime, wssUrl, clock } = await startOpenAi();
    const report = await runPhoneCall({
      target: { wssUrl },
      clock,
      clips: await clips(),
      scenario: {
        steps: [
          { do: 'wait-bot-silence', ms: 500 },
          { do: 'play', clip: 'question' },
          { do: 'wait-bot-silence', ms: 500 },
        ],
      },
    });
    expect(report.outcome).toBe('completed');
    expect(report.metrics.violations.total).toBe(0);
    expect(report.metrics.bot.segments).toBe(2);
    expect(report.metrics.utterances[0]!.replyLatencyMs).not.toBeNull();

    const connection = realtime.connections[0]!;
    expect(connection.protocol).toBe('ga');
    expect(connection.model).toBe('gpt-realtime');
    const update = connection.events.find((e) => e.type === 'session.update') as { session: Record<string, any> };
    expect(update.session.audio.input.format).toEqual({ type: 'audio/pcmu' });
    expect(update.session.audio.output).toEqual({ format: { type: 'audio/pcmu' }, voice: 'cedar' });
    expect(update.session.instructions).toBe('You are the front desk of a hotel.');
    expect(update.session.audio.input.turn_detection).toMatchObject({ type: 'server_vad', interrupt_response: true });
    // The caller's audio went through untouched: 8 kHz mu-law, one byte per sample.
    expect(connection.appendedAudioBytes).toBeGreaterThan(report.metrics.caller.framesSent * 160 * 0.9);
    expect(connection.responses.map((r) => r.status)).toEqual(['completed', 'completed']);
  });

  it('barges in on the first turn: clear at once, nothing stale after it, the greeting truncated to what was heard', async () => {
    // Generated at real time, the greeting is still being generated when the caller speaks: the
    // server's VAD cancels it, and the client truncates it.
    const { realtime, wssUrl, clock } = await startOpenAi('ga', 1, REAL_CLOCK);
    const report = await runPhoneCall({
      target: { wssUrl },
      clock,
      clips: await clips(),
      scenario: {
        steps: [
          { do: 'wait-bot-audio', thenMs: 1500 },
          { do: 'play', clip: 'interruption' },
          { do: 'wait-bot-silence', ms: 500 },
        ],
      },
    });
    expect(report.outcome).toBe('completed');
    expect(report.metrics.clears).toHaveLength(1);
    expect(report.metrics.clears[0]!.lateAudioMs).toBe(0);

    const connection = realtime.connections[0]!;
    expect(connection.responses[0]!.status).toBe('cancelled');
    expect(connection.truncations).toHaveLength(1);
    const [truncation] = connection.truncations;
    expect(truncation!.itemId).toBe(connection.responses[0]!.itemId);
    expect(truncation!.accepted).toBe(true);
    // What the server says was heard matches what the simulated phone played (counted in frames,
    // not by a clock a loaded machine slows), within a few frames.
    const played = report.metrics.clears[0]!.playedAudioMs;
    expect(played).toBeGreaterThan(0);
    expect(Math.abs(truncation!.audioEndMs - played)).toBeLessThan(250);
    expect(truncation!.audioEndMs).toBeLessThanOrEqual(connection.responses[0]!.audioSentMs);
    // And the bot answered the interruption.
    expect(connection.responses).toHaveLength(2);
    expect(report.metrics.utterances[0]!.replyLatencyMs).not.toBeNull();

    // The call's record gives the vendor's events for each turn, and the greeting's heard part.
    const record = await endedCallRecord();
    expect(record.counts).toMatchObject({ barge_ins: 1 });
    const [greeting, answer] = record.turns;
    expect(greeting).toMatchObject({ engine: 's2s', kind: 'greeting', interruption: expect.any(Object) });
    expect(Math.abs(greeting.heard_ms - truncation!.audioEndMs)).toBeLessThan(25);
    expect(answer).toMatchObject({ engine: 's2s', kind: 'answer' });
    expect(answer.vendor_speech_started_ms).toBeLessThan(answer.tts_first_audio_ms);
    expect(answer.tts_first_audio_ms).toBeLessThanOrEqual(answer.first_frame_sent_ms);
  });

  it('a burst that is not speech pauses the bot before the vendor could judge it, and the item resumes with nothing lost', async () => {
    // 80 ms of a syllable: Silero finds it plausible at once; the vendor's VAD (100 ms of speech) never starts.
    const { realtime, wssUrl, clock } = await startOpenAi('ga', 1, REAL_CLOCK);
    const burst = (await readMulawFile(fixture('A07_go_forward.ulaw'))).slice(500 * 8, 580 * 8);
    const report = await runPhoneCall({
      target: { wssUrl },
      clock,
      clips: { burst: { mulaw: burst, voiced: null } },
      scenario: {
        steps: [
          { do: 'wait-bot-audio', thenMs: 1500 },
          { do: 'play', clip: 'burst' },
          { do: 'wait-bot-silence', ms: 800 },
        ],
      },
    });
    expect(report.outcome).toBe('completed');
    expect(report.metrics.clears).toHaveLength(1);
    expect(report.metrics.clears[0]!.resumedAfterMs).not.toBeNull();

    const connection = realtime.connections[0]!;
    expect(connection.responses[0]!.status).toBe('completed');
    expect(connection.truncations).toHaveLength(0);
    // The caller heard the whole greeting: what the clear dropped was sent again.
    expect(report.metrics.bot.playedAudioMs).toBeGreaterThanOrEqual(connection.responses[0]!.audioSentMs - 40);
  });

  it('barges in on a later turn, truncating that turn’s item from its own start', async () => {
    // Generated ten times faster than it plays, the answer is complete at the server and still
    // playing on the phone when the caller speaks: only the truncate can fix the context.
    const { realtime, wssUrl, clock } = await startOpenAi('ga', 10, REAL_CLOCK);
    const report = await runPhoneCall({
      target: { wssUrl },
      clock,
      clips: await clips(),
      scenario: {
        steps: [
          { do: 'wait-bot-silence', ms: 500 },
          { do: 'play', clip: 'question' },
          { do: 'wait-bot-audio', thenMs: 1200 },
          { do: 'play', clip: 'interruption' },
          { do: 'wait-bot-silence', ms: 500 },
        ],
      },
    });
    expect(report.outcome).toBe('completed');
    const connection = realtime.connections[0]!;
    expect(connection.responses.map((r) => r.status)).toEqual(['completed', 'completed', 'completed']);
    expect(connection.truncations).toHaveLength(1);
    const [truncation] = connection.truncations;
    expect(truncation!.itemId).toBe(connection.responses[1]!.itemId);
    expect(truncation!.accepted).toBe(true);
    expect(report.metrics.clears[0]!.playedAudioMs).toBeGreaterThan(0);
    expect(Math.abs(truncation!.audioEndMs - report.metrics.clears[0]!.playedAudioMs)).toBeLessThan(250);
    expect(report.metrics.clears[0]!.lateAudioMs).toBe(0);
  });

  it('speaks the beta protocol when asked: OpenAI-Beta header and g711_ulaw', async () => {
    const { realtime, wssUrl, clock } = await startOpenAi('beta');
    const report = await runPhoneCall({
      target: { wssUrl },
      clock,
      scenario: { steps: [{ do: 'wait-bot-silence', ms: 400 }] },
    });
    expect(report.metrics.firstBotAudioMs).not.toBeNull();
    const connection = realtime.connections[0]!;
    expect(connection.protocol).toBe('beta');
    const update = connection.events.find((e) => e.type === 'session.update') as { session: Record<string, unknown> };
    expect(update.session).toMatchObject({
      input_audio_format: 'g711_ulaw',
      output_audio_format: 'g711_ulaw',
      voice: 'cedar',
    });
  });

  it('apologises and hangs up when the vendor drops the connection mid-call', async () => {
    const { realtime, wssUrl, clock } = await startOpenAi();
    // The vendor drops while the greeting plays.
    const report = await runPhoneCall({
      target: { wssUrl },
      clock,
      scenario: { steps: [], endOfScript: 'stay', maxDurationMs: 30_000 },
      onEvent: (event) => {
        if (event.kind === 'bot-audio-start') realtime.dropAll();
      },
    });
    expect(report.outcome).toBe('server-closed');
    expect(report.close).toMatchObject({ code: 1000, by: 'server' });
    // The greeting was cut, then the offline voice apologised before the close.
    expect(report.metrics.bot.segments).toBeGreaterThanOrEqual(2);
  });
});

describe('a phone call on the Gemini Live profile', () => {
  async function startGemini() {
    const live = new GeminiLiveEmulator({ latencies: FAST, replies: [GREETING, ANSWER, 'Of course.'] });
    emulators = await startEmulatorServer([live]);
    server = await startCallServer(() => undefined, { SWITCHBOARD_GEMINI_URL: emulators.url });
    const { wssUrl } = await server.createConfig({
      bot_profile: 'gemini_multimodal_live_2024_12',
      services: { llm: 'gemini' },
      config: [
        {
          service: 'llm',
          options: [
            { name: 'initial_messages', value: [{ role: 'system', content: 'You are the front desk of a hotel.' }] },
            { name: 'run_on_config', value: true },
          ],
        },
      ],
      api_keys: { gemini: 'gem-key-0123' },
    });
    return { live, wssUrl };
  }

  it('sets up, greets, answers in 8 kHz from its 24 kHz, and is interrupted cleanly', async () => {
    const { live, wssUrl } = await startGemini();
    const scenario: Scenario = {
      steps: [
        { do: 'wait-bot-silence', ms: 500 },
        { do: 'play', clip: 'question' },
        { do: 'wait-bot-audio', thenMs: 1000 },
        { do: 'play', clip: 'interruption' },
        { do: 'wait-bot-silence', ms: 500 },
      ],
    };
    const report = await runPhoneCall({ target: { wssUrl }, clips: await clips(), scenario });
    expect(report.outcome).toBe('completed');
    expect(report.metrics.violations.total).toBe(0);

    const connection = live.connections[0]!;
    expect(connection.setup).toMatchObject({
      model: 'models/gemini-2.5-flash-native-audio-preview-12-2025',
      generationConfig: { responseModalities: ['AUDIO'] },
      systemInstruction: { parts: [{ text: 'You are the front desk of a hotel.' }] },
    });
    // 16 kHz PCM in: two bytes per sample, twice the samples of the phone's 8 kHz.
    expect(connection.audioMimeTypes).toEqual(['audio/pcm;rate=16000']);
    expect(connection.audioBytes).toBeGreaterThan(report.metrics.caller.framesSent * 160 * 4 * 0.9);
    expect(connection.interruptions).toBe(1);
    expect(report.metrics.clears).toHaveLength(1);
    expect(report.metrics.clears[0]!.lateAudioMs).toBe(0);
    expect(report.metrics.utterances.map((u) => u.replyLatencyMs !== null)).toEqual([true, true]);
  });
});
