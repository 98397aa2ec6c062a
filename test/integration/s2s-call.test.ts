import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { type RunningEmulators, startEmulatorServer } from '../../src/tools/emulators/emulator-server.js';
import { OpenAiRealtimeEmulator } from '../../src/tools/emulators/openai-realtime-emulator.js';
import { GeminiLiveEmulator } from '../../src/tools/emulators/gemini-live-emulator.js';
import { readMulawFile } from '../../src/tools/simulator/clip-file.js';
import { runPhoneCall } from '../../src/tools/simulator/phone-call.js';
import type { Scenario } from '../../src/tools/simulator/scenario.js';
import { type CallServer, startCallServer } from '../helpers/call-server.js';
import { type Clock, REAL_CLOCK, scaledClock } from '../../src/shared/clock.js';
import { TEST_KEY } from '../helpers/test-app.js';
import { startToolReceiver } from '../fakes/tool-webhook-receiver.js';

/**
 * Phone calls on the speech-to-speech profiles, through the real adapters and the vendors'
 * emulated websockets: the caller's audio goes to the model, its audio comes back, and barge-in
 * clears the line and truncates the model's item to what the simulator actually played.
 */

const fixture = (name: string) => fileURLToPath(new URL(`../../fixtures/audio/${name}`, import.meta.url));
const FAST = { llmFirstTokenMs: 80, ttsFirstByteMs: 40, ttsRealTimeFactor: 4 };
/**
 * The calls' clock (shared/clock.ts), shared by the server, the simulator, the webhooks and the
 * Gemini emulator's playback wait: SPEED times faster than wall time where the test is about what
 * the call says and does, real time where it is about barge-in (the clear, the heard point, the
 * truncation). The emulators generate on wall time, as a vendor does: their 4x is then 4/SPEED x.
 */
const SPEED = 3;
const CALL_CLOCK: Clock = scaledClock(SPEED);
const GREETING = 'Hello and welcome to the harbour hotel, how may I help you this fine evening?';
const ANSWER = 'We have a lovely room with a view of the harbour for tonight, and breakfast is included in the price.';

let emulators: RunningEmulators | undefined;
let server: CallServer | undefined;
const closers: Array<() => Promise<void>> = [];

afterEach(async () => {
  await server?.close();
  await emulators?.close();
  server = undefined;
  emulators = undefined;
  for (const close of closers.splice(0)) await close();
});

async function clips() {
  return {
    question: { mulaw: await readMulawFile(fixture('A06_birch_canoe.ulaw')) },
    interruption: { mulaw: await readMulawFile(fixture('A07_go_forward.ulaw')) },
  };
}

/** Milliseconds of bot audio the simulator played from the start of the segment to the clear. */
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

describe('function calls on the speech-to-speech profiles', () => {
  const TOOLS = ['check_room', 'check_breakfast'].map((name) => ({
    type: 'function',
    function: { name, description: `the ${name} function`, parameters: { type: 'object', properties: {} } },
  }));
  const PARALLEL = {
    text: 'Let me check.',
    toolCalls: [
      { name: 'check_room', argumentsJson: '{"nights":2}' },
      { name: 'check_breakfast', argumentsJson: '{}' },
    ],
  };
  const config = (services: Record<string, string>, profile: string, webhooks: Record<string, string>) => ({
    bot_profile: profile,
    services,
    config: [
      {
        service: 'llm',
        options: [
          { name: 'initial_messages', value: [{ role: 'system', content: 'You are the front desk of a hotel.' }] },
          { name: 'tools', value: TOOLS },
        ],
      },
    ],
    webhook_tools: Object.fromEntries(Object.entries(webhooks).map(([name, url]) => [name, { url }])),
    webhook_secret: 'a-webhook-secret-of-some-length',
    ...(services.llm === 'gemini' ? { api_keys: { gemini: 'gem-key-0123' } } : {}),
  });
  const scenario: Scenario = {
    steps: [
      { do: 'play', clip: 'question' },
      { do: 'wait-bot-audio', timeoutMs: 15_000 },
      { do: 'wait-bot-silence', ms: 1500, timeoutMs: 30_000 },
    ],
  };

  it('OpenAI Realtime: parallel calls run once each through their webhooks, and the results go back together', async () => {
    const receiver = await startToolReceiver(
      {
        check_room: { delayMs: 500, result: { free: true } },
        check_breakfast: { delayMs: 800, result: { until: '10:30' } },
      },
      CALL_CLOCK,
    );
    closers.push(receiver.close);
    const realtime = new OpenAiRealtimeEmulator({
      latencies: FAST,
      replies: [PARALLEL],
      afterToolResults: 'A room is free, and breakfast is until half past ten.',
      transcripts: ['do you have a room'],
    });
    emulators = await startEmulatorServer([realtime]);
    server = await startCallServer(() => undefined, { SWITCHBOARD_OPENAI_URL: emulators.url }, { clock: CALL_CLOCK });
    const { wssUrl } = await server.createConfig(
      config({ llm: 'openai_realtime' }, 'openai_realtime_beta_2024_10', {
        check_room: receiver.urlOf('check_room'),
        check_breakfast: receiver.urlOf('check_breakfast'),
      }),
    );
    const report = await runPhoneCall({ target: { wssUrl }, clock: CALL_CLOCK, clips: await clips(), scenario });
    expect(report.outcome).toBe('completed');
    expect(receiver.requests.map((r) => r.body.function_name).sort()).toEqual(['check_breakfast', 'check_room']);
    const connection = realtime.connections[0]!;
    expect(connection.toolCalls).toHaveLength(2);
    expect(connection.toolOutputs.map((o) => JSON.parse(o.output))).toEqual(
      expect.arrayContaining([{ free: true }, { until: '10:30' }]),
    );
    // One response.create for both results: the model answered once, after all of them.
    const events = connection.events.map((e) => e.type);
    const afterOutputs = events.slice(events.lastIndexOf('conversation.item.create'));
    expect(afterOutputs.filter((t) => t === 'response.create')).toHaveLength(1);
    expect(connection.responses.at(-1)!.text).toBe('A room is free, and breakfast is until half past ten.');
  });

  it('Gemini Live: the calls run through their webhooks and one toolResponse answers them', async () => {
    const receiver = await startToolReceiver(
      {
        check_room: { delayMs: 300, result: { free: true } },
        check_breakfast: { result: { until: '10:30' } },
      },
      CALL_CLOCK,
    );
    closers.push(receiver.close);
    const live = new GeminiLiveEmulator({
      latencies: FAST,
      clock: CALL_CLOCK,
      replies: [PARALLEL],
      afterToolResults: 'Yes, and breakfast is until half past ten.',
    });
    emulators = await startEmulatorServer([live]);
    server = await startCallServer(() => undefined, { SWITCHBOARD_GEMINI_URL: emulators.url }, { clock: CALL_CLOCK });
    const { wssUrl } = await server.createConfig(
      config({ llm: 'gemini' }, 'gemini_multimodal_live_2024_12', {
        check_room: receiver.urlOf('check_room'),
        check_breakfast: receiver.urlOf('check_breakfast'),
      }),
    );
    const report = await runPhoneCall({ target: { wssUrl }, clock: CALL_CLOCK, clips: await clips(), scenario });
    expect(report.outcome).toBe('completed');
    expect(receiver.requests).toHaveLength(2);
    const connection = live.connections[0]!;
    expect(connection.toolResponses.map((r) => r.name).sort()).toEqual(['check_breakfast', 'check_room']);
    expect(connection.toolResponses.every((r) => !r.cancelled)).toBe(true);
  });

  type Vendor = 'openai_realtime' | 'gemini_live';
  /** A call on either vendor with these webhooks (extra fields per entry), the model calling `calls`. */
  async function s2sToolCall(
    vendor: Vendor,
    behaviours: Parameters<typeof startToolReceiver>[0],
    entries: Record<string, Record<string, unknown>>,
    calls: Array<{ name: string; argumentsJson: string }>,
    callScenario: Scenario = scenario,
  ) {
    // Every function in TOOLS needs something to answer it.
    const receiver = await startToolReceiver({ check_breakfast: { result: {} }, ...behaviours }, CALL_CLOCK);
    closers.push(receiver.close);
    const reply = { text: 'Let me check.', toolCalls: calls };
    const after = 'All done, thank you.';
    const emulator =
      vendor === 'openai_realtime'
        ? new OpenAiRealtimeEmulator({
            latencies: FAST,
            replies: [reply],
            afterToolResults: after,
            transcripts: ['do you have a room'],
          })
        : new GeminiLiveEmulator({ latencies: FAST, clock: CALL_CLOCK, replies: [reply], afterToolResults: after });
    emulators = await startEmulatorServer([emulator]);
    server = await startCallServer(
      () => undefined,
      { SWITCHBOARD_OPENAI_URL: emulators.url, SWITCHBOARD_GEMINI_URL: emulators.url },
      { captureLogs: true, clock: CALL_CLOCK },
    );
    const body = config(
      { llm: vendor === 'openai_realtime' ? 'openai_realtime' : 'gemini' },
      vendor === 'openai_realtime' ? 'openai_realtime_beta_2024_10' : 'gemini_multimodal_live_2024_12',
      Object.fromEntries(['check_breakfast', ...Object.keys(behaviours)].map((name) => [name, receiver.urlOf(name)])),
    );
    for (const [name, extra] of Object.entries(entries)) Object.assign(body.webhook_tools[name]!, extra);
    const { wssUrl } = await server.createConfig(body);
    const report = await runPhoneCall({
      target: { wssUrl },
      clock: CALL_CLOCK,
      clips: await clips(),
      scenario: callScenario,
    });
    return { report, receiver, emulator };
  }
  const phrasesSaid = () =>
    server!.logs.filter((r) => r.msg === 'saying a phrase while functions run').map((r) => r.text);

  it.each<Vendor>(['openai_realtime', 'gemini_live'])(
    '%s: a slow function gets its filler phrase once, said between the model’s items',
    async (vendor) => {
      const { report, receiver } = await s2sToolCall(
        vendor,
        { check_room: { delayMs: 2500, result: { free: true } } },
        { check_room: { say: 'One moment while I look at the book.' } },
        [{ name: 'check_room', argumentsJson: '{}' }],
      );
      expect(report.outcome).toBe('completed');
      expect(receiver.requests.map((r) => r.body.function_name)).toEqual(['check_room']);
      expect(phrasesSaid()).toEqual(['One moment while I look at the book.']);
      expect(server!.logs.filter((r) => r.msg === 'could not say the phrase')).toEqual([]);
    },
  );

  it.each<Vendor>(['openai_realtime', 'gemini_live'])(
    '%s: a streaming webhook’s actions are carried out: tts:say said, messages appended to the model, the call ended after its answer',
    async (vendor) => {
      const { report, emulator } = await s2sToolCall(
        vendor,
        {
          check_room: {
            gapMs: 200,
            sse: [
              { event: 'action', data: { action: 'tts:say', arguments: { text: 'Checking the book now.' } } },
              {
                event: 'action',
                data: {
                  action: 'llm:append_to_messages',
                  arguments: { messages: [{ role: 'system', content: 'The guest is a regular.' }] },
                },
              },
              { event: 'action', data: { action: 'call:end' } },
              { event: 'result', data: { free: true } },
            ],
          },
        },
        { check_room: { streaming: true } },
        [{ name: 'check_room', argumentsJson: '{}' }],
        { ...scenario, endOfScript: 'stay', maxDurationMs: 30_000 },
      );
      expect(phrasesSaid()).toEqual(['Checking the book now.']);
      if (emulator instanceof OpenAiRealtimeEmulator) {
        const appended = emulator.connections[0]!.events.filter(
          (e: any) => e.type === 'conversation.item.create' && e.item?.type === 'message' && e.item.role === 'system',
        );
        expect(appended.map((e: any) => e.item.content)).toEqual([
          [{ type: 'input_text', text: 'The guest is a regular.' }],
        ]);
      } else {
        const appended = emulator.connections[0]!.messages.filter(
          (m: any) => m.clientContent && m.clientContent.turnComplete === false,
        );
        expect(appended.map((m: any) => m.clientContent.turns)).toEqual([
          [{ role: 'user', parts: [{ text: 'The guest is a regular.' }] }],
        ]);
      }
      // The call ended from the bot's side once its answer after the result had played.
      expect(report.outcome).toBe('server-closed');
      const ended = await server!.waitForLog((r) => r.msg === 'call ended');
      expect(ended.reason).toBe('end_call');
    },
  );
});
