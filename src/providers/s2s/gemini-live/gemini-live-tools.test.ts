import { afterEach, describe, expect, it } from 'vitest';
import { EMULATOR_ENV, context } from '../../../../test/helpers/provider-kit.js';
import { RecordedS2sEvents, silenceFrames, speechFrames } from '../../../../test/helpers/s2s-kit.js';
import { ROUND_TOOLS, describeResults } from '../../../../test/helpers/tool-round.js';
import { type RunningEmulators, startEmulatorServer } from '../../../tools/emulators/emulator-server.js';
import { GeminiLiveEmulator } from '../../../tools/emulators/gemini-live-emulator.js';
import type { S2sSession } from '../types.js';
import { createGeminiLive } from './index.js';

const KEY = 'gemini-live-test-0123456789';
let server: RunningEmulators | undefined;
let session: S2sSession | undefined;
afterEach(async () => {
  await session?.close();
  await server?.close();
  session = undefined;
  server = undefined;
});

function emulator() {
  return new GeminiLiveEmulator({
    latencies: { llmFirstTokenMs: 2, ttsFirstByteMs: 2, ttsRealTimeFactor: 50 },
    apiKey: KEY,
    replies: [
      {
        toolCalls: [
          { name: 'check_table', argumentsJson: '{"people":2}' },
          { name: 'get_hours', argumentsJson: '{}' },
        ],
      },
    ],
    afterToolResults: (results) => `Results ${describeResults(results)}`,
  });
}

async function open(vendor: GeminiLiveEmulator) {
  server = await startEmulatorServer([vendor]);
  const events = new RecordedS2sEvents();
  session = await createGeminiLive({
    options: {},
    apiKey: KEY,
    serviceOptions: { base_url: server.url.replace('127.0.0.1', 'localhost') },
    env: EMULATOR_ENV,
  }).open(
    context(),
    { history: [{ role: 'system', content: 'You take bookings.' }], greet: true, tools: ROUND_TOOLS },
    events,
  );
  return { session, events };
}

describe('Gemini Live function calling against the emulator', () => {
  it('tools in setup, each toolCall function once, one toolResponse with every result, then the answer', async () => {
    const vendor = emulator();
    const { session, events } = await open(vendor);
    await events.until(() => events.toolCalls.length === 2);
    const connection = vendor.connections[0]!;
    expect((connection.setup as { tools: unknown }).tools).toEqual([
      {
        functionDeclarations: [
          {
            name: 'check_table',
            description: 'Whether a table is free',
            parameters: { type: 'object', properties: { people: { type: 'integer' } }, required: ['people'] },
          },
          { name: 'get_hours', description: 'Opening hours', parameters: { type: 'object', properties: {} } },
        ],
      },
    ]);
    expect(events.toolCalls).toEqual(
      connection.toolCalls.map((c) => ({ id: c.id, name: c.name, argumentsJson: JSON.stringify(c.args) })),
    );
    session.sendToolResults([
      { call: events.toolCalls[0]!, resultJson: '{"free":true}' },
      { call: events.toolCalls[1]!, resultJson: '"12-23"' },
    ]);
    await events.until(() => events.botTranscripts.length === 1);
    expect(events.botTranscripts[0]!.text).toBe('Results check_table={"free":true} get_hours={"result":"12-23"}');
    const responses = connection.messages.filter((m) => m.toolResponse);
    expect(responses).toHaveLength(1);
    expect(connection.toolResponses.map((r) => r.id)).toEqual(connection.toolCalls.map((c) => c.id));
  });

  it('the caller speaking while calls are pending cancels them; late results are taken without harm', async () => {
    const vendor = emulator();
    const { session, events } = await open(vendor);
    await events.until(() => events.toolCalls.length === 2);
    for (const frame of [...speechFrames(300), ...silenceFrames(100)]) session.sendAudio(frame);
    const connection = vendor.connections[0]!;
    while (connection.toolCallCancellations.length === 0) await new Promise((r) => setTimeout(r, 10));
    expect(connection.toolCallCancellations[0]).toEqual(connection.toolCalls.map((c) => c.id));
    session.sendToolResults(events.toolCalls.map((call) => ({ call, resultJson: '{}' })));
    while (connection.toolResponses.length < 2) await new Promise((r) => setTimeout(r, 10));
    expect(connection.toolResponses.every((r) => r.cancelled)).toBe(true);
    expect(connection.closeCode).toBeUndefined();
  });
});
