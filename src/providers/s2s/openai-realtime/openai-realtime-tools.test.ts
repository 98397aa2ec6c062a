import { afterEach, describe, expect, it } from 'vitest';
import { EMULATOR_ENV, context } from '../../../../test/helpers/provider-kit.js';
import { RecordedS2sEvents } from '../../../../test/helpers/s2s-kit.js';
import { ROUND_TOOLS, describeResults } from '../../../../test/helpers/tool-round.js';
import { type RunningEmulators, startEmulatorServer } from '../../../tools/emulators/emulator-server.js';
import { OpenAiRealtimeEmulator } from '../../../tools/emulators/openai-realtime-emulator.js';
import type { S2sSession } from '../types.js';
import { createOpenAiRealtime } from './index.js';

const KEY = 'sk-realtime-test-0123456789';
let server: RunningEmulators | undefined;
let session: S2sSession | undefined;
afterEach(async () => {
  await session?.close();
  await server?.close();
  session = undefined;
  server = undefined;
});

async function open(emulator: OpenAiRealtimeEmulator, protocol?: 'beta') {
  server = await startEmulatorServer([emulator]);
  const events = new RecordedS2sEvents();
  const provider = createOpenAiRealtime({
    options: {},
    apiKey: KEY,
    serviceOptions: { base_url: server.url.replace('127.0.0.1', 'localhost'), ...(protocol ? { protocol } : {}) },
    env: EMULATOR_ENV,
  });
  session = await provider.open(
    context(),
    { history: [{ role: 'system', content: 'You take bookings.' }], greet: true, tools: ROUND_TOOLS },
    events,
  );
  return { session, events };
}

function emulator() {
  return new OpenAiRealtimeEmulator({
    latencies: { llmFirstTokenMs: 2, ttsFirstByteMs: 2, ttsRealTimeFactor: 50 },
    apiKey: KEY,
    replies: [
      {
        text: 'One moment.',
        toolCalls: [
          { name: 'check_table', argumentsJson: '{"people":2}' },
          { name: 'get_hours', argumentsJson: '{}' },
        ],
      },
    ],
    afterToolResults: (results) => `Results ${describeResults(results)}`,
  });
}

describe('OpenAI Realtime function calling against the emulator', () => {
  it('tools in session.update, each function_call item once, outputs back and one response.create', async () => {
    const vendor = emulator();
    const { session, events } = await open(vendor);
    await events.until(() => events.toolCalls.length === 2);
    const connection = vendor.connections[0]!;
    const update = connection.events.find((e) => e.type === 'session.update') as { session: { tools: unknown } };
    expect(update.session.tools).toEqual([
      {
        type: 'function',
        name: 'check_table',
        description: 'Whether a table is free',
        parameters: { type: 'object', properties: { people: { type: 'integer' } }, required: ['people'] },
      },
      {
        type: 'function',
        name: 'get_hours',
        description: 'Opening hours',
        parameters: { type: 'object', properties: {} },
      },
    ]);
    expect(events.toolCalls).toEqual(
      connection.toolCalls.map((c) => ({ id: c.callId, name: c.name, argumentsJson: c.arguments })),
    );
    const responsesBefore = connection.events.filter((e) => e.type === 'response.create').length;
    session.sendToolResults([
      { call: events.toolCalls[1]!, resultJson: '{"open":"12-23"}' },
      { call: events.toolCalls[0]!, resultJson: '{"free":true}' },
    ]);
    await events.until(() => events.botTranscripts.length === 2);
    expect(events.botTranscripts[1]!.text).toBe('Results get_hours={"open":"12-23"} check_table={"free":true}');
    expect(connection.toolOutputs).toEqual([
      { callId: events.toolCalls[1]!.id, output: '{"open":"12-23"}' },
      { callId: events.toolCalls[0]!.id, output: '{"free":true}' },
    ]);
    expect(connection.events.filter((e) => e.type === 'response.create').length).toBe(responsesBefore + 1);
  });

  it('works on the beta protocol too, and the emulator refuses an output for a call it never made', async () => {
    const vendor = emulator();
    const { session, events } = await open(vendor, 'beta');
    await events.until(() => events.toolCalls.length === 2);
    expect(vendor.connections[0]!.protocol).toBe('beta');
    session.sendToolResults([
      { call: { id: 'call_unknown', name: 'get_hours', argumentsJson: '{}' }, resultJson: '{}' },
    ]);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(vendor.connections[0]!.toolOutputs).toEqual([]);
  });
});
