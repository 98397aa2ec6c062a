import { describe, expect, it } from 'vitest';
import { context, EMULATOR_ENV } from '../../../../test/helpers/provider-kit.js';
import {
  ROUND_TOOLS,
  collectDeltas,
  expectRound,
  roundScript,
  runToolRound,
  toolRoundVendor,
} from '../../../../test/helpers/tool-round.js';
import { OpenAiEmulator } from '../../../tools/emulators/openai-emulator.js';
import { MISSING_RESULT_JSON } from '../tool-history.js';
import { createOpenAiCompatibleLlm } from './index.js';
import { toChatMessages } from './openai-llm.js';

const KEY = 'sk-test-0123456789';
const start = toolRoundVendor(
  () => new OpenAiEmulator(roundScript(KEY)),
  (baseUrl) =>
    createOpenAiCompatibleLlm('openai', {
      options: {},
      apiKey: KEY,
      serviceOptions: { base_url: baseUrl },
      env: EMULATOR_ENV,
    }),
);
describe('OpenAI-compatible function calling against the emulator', () => {
  it('a round: parallel calls as separate deltas, each result as a tool message right after the calls', async () => {
    const { vendor, llm } = await start();
    const { calls } = await expectRound(llm);
    const sent = (vendor.requests[1]!.body as { messages: unknown[] }).messages;
    expect(sent).toEqual([
      { role: 'system', content: 'You take bookings.' },
      { role: 'user', content: 'A table for two, and when are you open?' },
      {
        role: 'assistant',
        content: 'One moment.',
        tool_calls: calls.map((c) => ({
          id: c.id,
          type: 'function',
          function: { name: c.name, arguments: c.argumentsJson },
        })),
      },
      { role: 'tool', tool_call_id: calls[0]!.id, content: '{"free":true}' },
      { role: 'tool', tool_call_id: calls[1]!.id, content: '{"hours":"12-23"}' },
    ]);
    expect((vendor.requests[1]!.body as { tools: unknown }).tools).toEqual(ROUND_TOOLS);
  });

  it('a result that reaches the conversation after the caller spoke moves up to answer its call', async () => {
    const { vendor, llm } = await start();
    const { calls } = await runToolRound(llm, { callerSpokeBetween: true });
    expect(vendor.requests[1]!.status).toBe(200);
    const sent = (vendor.requests[1]!.body as { messages: Array<{ role: string; tool_call_id?: string }> }).messages;
    expect(sent.slice(2).map((m) => m.tool_call_id ?? m.role)).toEqual([
      'assistant',
      calls[0]!.id,
      calls[1]!.id,
      'user',
    ]);
  });

  it('a call without a result gets an explicit error result; a result without its call is dropped', async () => {
    const { vendor, llm } = await start();
    await collectDeltas(llm, {
      messages: [
        { role: 'user', content: 'Hi' },
        { role: 'assistant', content: '', toolCalls: [{ id: 'call_x', name: 'get_hours', argumentsJson: '{}' }] },
        { role: 'user', content: 'Hello?' },
        { role: 'tool', toolCallId: 'call_gone', toolName: 'get_hours', content: '{}' },
      ],
      tools: ROUND_TOOLS,
    });
    expect(vendor.requests[0]!.status).toBe(200);
    expect((vendor.requests[0]!.body as { messages: unknown[] }).messages).toEqual([
      { role: 'user', content: 'Hi' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'call_x', type: 'function', function: { name: 'get_hours', arguments: '{}' } }],
      },
      { role: 'tool', tool_call_id: 'call_x', content: MISSING_RESULT_JSON },
      { role: 'user', content: 'Hello?' },
    ]);
  });

  it('the emulator refuses tool messages out of place, as OpenAI does', async () => {
    const { url } = await start();
    const post = (messages: unknown[]) =>
      fetch(`${url}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'gpt-4o', messages }),
      });
    const call = { id: 'call_1', type: 'function', function: { name: 'get_hours', arguments: '{}' } };
    const unanswered = await post([
      { role: 'user', content: 'Hi' },
      { role: 'assistant', content: null, tool_calls: [call] },
      { role: 'user', content: 'Hello?' },
    ]);
    expect(unanswered.status).toBe(400);
    expect(((await unanswered.json()) as { error: { message: string } }).error.message).toMatch(
      /^An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'\. The following tool_call_ids did not have response messages: call_1$/,
    );
    const stray = await post([
      { role: 'user', content: 'Hi' },
      { role: 'tool', tool_call_id: 'call_1', content: '{}' },
    ]);
    expect(((await stray.json()) as { error: { param: string } }).error.param).toBe('messages.[1].role');
    const wrongId = await post([
      { role: 'user', content: 'Hi' },
      { role: 'assistant', content: null, tool_calls: [call] },
      { role: 'tool', tool_call_id: 'call_2', content: '{}' },
    ]);
    expect(wrongId.status).toBe(400);
  });

  it('translation alone: no history for an unused conversation, text and calls kept together', () => {
    expect(
      toChatMessages(
        [{ role: 'assistant', content: 'Checking.', toolCalls: [{ id: 'c', name: 'get_hours', argumentsJson: '{}' }] }],
        context(),
        'openai',
      ).map((m) => m.role),
    ).toEqual(['assistant', 'tool']);
  });
});
