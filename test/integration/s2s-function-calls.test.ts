import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type RunningEmulators, startEmulatorServer } from '../../src/tools/emulators/emulator-server.js';
import { GeminiLiveEmulator } from '../../src/tools/emulators/gemini-live-emulator.js';
import { OpenAiRealtimeEmulator } from '../../src/tools/emulators/openai-realtime-emulator.js';
import { warmFliteWorker } from '../../src/providers/tts/flite/flite-worker-client.js';
import { runPhoneCall } from '../../src/tools/simulator/phone-call.js';
import type { Scenario } from '../../src/tools/simulator/scenario.js';
import { startToolReceiver } from '../fakes/tool-webhook-receiver.js';
import { type CallServer, startCallServer } from '../helpers/call-server.js';
import { S2S_CALL_CLOCK as CALL_CLOCK, S2S_LATENCIES as FAST, s2sClips as clips } from '../helpers/s2s-phone-call.js';

/**
 * Function calls on the speech-to-speech profiles, in phone calls through the real adapters and
 * the vendors' emulated websockets: the model's calls go to their webhooks, the results go back
 * to the model, and a slow or streaming webhook's phrases and actions are carried out. The calls
 * run on the call clock (helpers/s2s-phone-call.ts): none of them is about barge-in timing.
 */

let emulators: RunningEmulators | undefined;
let server: CallServer | undefined;
const closers: Array<() => Promise<void>> = [];

// The filler phrases are said in the offline voice, which a process loads on its first phrase
// (seconds on a busy machine, several times that on the call clock): loaded first, so that a
// phrase is not still loading when the caller, hearing nothing, hangs up.
beforeAll(async () => {
  await warmFliteWorker();
});

afterEach(async () => {
  await server?.close();
  await emulators?.close();
  server = undefined;
  emulators = undefined;
  for (const close of closers.splice(0)) await close();
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
