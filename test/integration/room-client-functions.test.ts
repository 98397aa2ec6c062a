import { afterEach, describe, expect, it } from 'vitest';
import type { LlmMessage } from '../../src/providers/types.js';
import { MAX_CLIENT_RESULT_BYTES } from '../../src/rooms/room-client-tools.js';
import { ScriptedLlm, ScriptedStt, ToneTts } from '../fakes/scripted-providers.js';
import { type CallServer, startCallServer } from '../helpers/call-server.js';
import { PipecatWsClient } from '../helpers/pipecat-ws-client.js';
import { TEST_KEY } from '../helpers/test-data.js';

/**
 * Functions answered by a room's client over RTVI, spoken to the way Pipecat's websocket
 * transport speaks (its own protobuf serializer) over a real socket to a real server: the
 * `llm-function-call` the client is sent, its `llm-function-call-result`, and what becomes of a
 * call the client never answers, answers wrongly, or leaves. The SDK's own handler is driven in
 * Chromium by test/browser/pipecat-sdk.test.ts.
 */

const ANSWER = 'Table twelve is free for you.';
const CHECK_TABLE = {
  type: 'function',
  function: {
    name: 'check_table',
    description: 'Whether a table is free',
    parameters: { type: 'object', properties: { party: { type: 'number' } } },
  },
};

let server: CallServer | undefined;
const clients: PipecatWsClient[] = [];

afterEach(async () => {
  for (const client of clients.splice(0)) client.close();
  await server?.close();
  server = undefined;
});

/** A room whose bot, on joining, says a word and calls check_table (call_1); the client is joined. */
async function roomCallingCheckTable() {
  const llm = new ScriptedLlm({
    replies: [
      { text: 'Let me look.', calls: [{ name: 'check_table', arguments: { party: 4 }, id: 'call_1' }] },
      ANSWER,
    ],
  });
  server = await startCallServer(
    (registry) => {
      registry
        .registerStt('scripted_stt', () => new ScriptedStt([]))
        .registerLlm('scripted_llm', () => llm)
        .registerTts('tone_tts', () => new ToneTts());
    },
    {},
    { publicHost: 'localhost', captureLogs: true },
  );
  const res = await fetch(`${server.baseUrl}/v1/bots/start`, {
    method: 'POST',
    headers: { authorization: `Bearer ${TEST_KEY}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      bot_profile: 'voice_2024_10',
      services: { stt: 'scripted_stt', llm: 'scripted_llm', tts: 'tone_tts' },
      config: [
        {
          service: 'llm',
          options: [
            { name: 'run_on_config', value: true },
            { name: 'tools', value: [CHECK_TABLE] },
          ],
        },
      ],
      max_duration: 120,
      transport: 'websocket',
    }),
  });
  expect(res.status).toBe(200);
  const { ws_url: wsUrl } = (await res.json()) as { ws_url: string };
  const client = await PipecatWsClient.connect(wsUrl);
  clients.push(client);
  await client.until('llm-function-call', () => client.of('llm-function-call').length > 0);
  return { llm, client, server };
}

/** The tool message answering call_1 in the model's second pass. */
async function secondPassResult(llm: ScriptedLlm, timeoutMs = 20_000): Promise<LlmMessage> {
  await expect.poll(() => llm.requests.length, { timeout: timeoutMs }).toBeGreaterThanOrEqual(2);
  const tool = llm.requests[1]!.messages.find((m) => m.role === 'tool');
  expect(tool).toMatchObject({ toolCallId: 'call_1', toolName: 'check_table' });
  return tool!;
}

describe('functions answered by the room client over RTVI', () => {
  it('sends llm-function-call as the SDK reads it; the matching result is the function result, one for an unknown tool_call_id is ignored', async () => {
    const { llm, client, server } = await roomCallingCheckTable();
    expect(client.of('llm-function-call')).toEqual([
      {
        label: 'rtvi-ai',
        type: 'llm-function-call',
        data: { function_name: 'check_table', tool_call_id: 'call_1', args: { party: 4 } },
      },
    ]);
    client.sendRtvi('llm-function-call-result', {
      function_name: 'check_table',
      tool_call_id: 'call_unknown',
      arguments: { party: 4 },
      result: { free: false },
    });
    await server.waitForLog((r) => String(r.msg).includes('for no function call this client was asked'));
    expect(llm.requests).toHaveLength(1);
    client.sendRtvi('llm-function-call-result', {
      function_name: 'check_table',
      tool_call_id: 'call_1',
      arguments: { party: 4 },
      result: { free: true, table: 12 },
    });
    expect(JSON.parse((await secondPassResult(llm)).content)).toEqual({ free: true, table: 12 });
    // The same id again: the call is settled, so it is ignored too, and the socket stays open.
    client.sendRtvi('llm-function-call-result', {
      function_name: 'check_table',
      tool_call_id: 'call_1',
      arguments: {},
      result: { free: false },
    });
    await expect.poll(() => server.logs.filter((r) => String(r.msg).includes('for no function call')).length).toBe(2);
    expect(client.closed).toBeUndefined();
    const summary = await server.waitForLog((r) => r.msg === 'function call answered');
    expect(summary).toMatchObject({ tool: 'check_table', toolCallId: 'call_1', outcome: 'ok' });
  });

  it('a client that never answers: the call times out into an error result the model can explain', async () => {
    const { llm, server } = await roomCallingCheckTable();
    const tool = await secondPassResult(llm, 30_000);
    expect(JSON.parse(tool.content)).toEqual({ error: 'check_table did not answer within 10 s.' });
    expect(await server.waitForLog((r) => r.msg === 'function call failed')).toMatchObject({
      tool: 'check_table',
      outcome: 'timeout',
    });
  });

  it('a client that leaves: its call is cancelled at once', async () => {
    const { llm, client, server } = await roomCallingCheckTable();
    client.close();
    const tool = await secondPassResult(llm, 5000);
    expect(JSON.parse(tool.content)).toEqual({ error: 'check_table was cancelled: the client left the room.' });
    expect(await server.waitForLog((r) => r.msg === 'function call failed')).toMatchObject({ outcome: 'cancelled' });
  });

  it('a result too large is refused: an error result, and the client stays connected', async () => {
    const { llm, client } = await roomCallingCheckTable();
    client.sendRtvi('llm-function-call-result', {
      function_name: 'check_table',
      tool_call_id: 'call_1',
      arguments: { party: 4 },
      result: { menu: 'x'.repeat(MAX_CLIENT_RESULT_BYTES + 1) },
    });
    const tool = await secondPassResult(llm);
    expect(JSON.parse(tool.content)).toEqual({
      error: `check_table returned a result larger than ${MAX_CLIENT_RESULT_BYTES} bytes.`,
    });
    expect(client.closed).toBeUndefined();
  });
});
