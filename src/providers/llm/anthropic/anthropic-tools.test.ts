import { describe, expect, it } from 'vitest';
import { EMULATOR_ENV } from '../../../../test/helpers/provider-kit.js';
import {
  collectDeltas,
  expectRound,
  roundScript,
  runToolRound,
  toolRoundVendor,
} from '../../../../test/helpers/tool-round.js';
import { AnthropicEmulator } from '../../../tools/emulators/anthropic-emulator.js';
import { CALL_START_TURN } from '../llm-http.js';
import { MISSING_RESULT_JSON } from '../tool-history.js';
import { createAnthropicLlm } from './index.js';

const KEY = 'sk-ant-test-0123456789';
const start = toolRoundVendor(
  () => new AnthropicEmulator(roundScript(KEY)),
  (baseUrl) =>
    createAnthropicLlm({ options: {}, apiKey: KEY, serviceOptions: { base_url: baseUrl }, env: EMULATOR_ENV }),
);
type Sent = { messages: Array<{ role: string; content: unknown }>; tools: unknown[] };

describe('Anthropic function calling against the emulator', () => {
  it('a round: tool_use blocks as separate calls, their tool_result blocks opening the next user turn', async () => {
    const { vendor, llm } = await start();
    const { calls } = await expectRound(llm);
    expect(calls.every((c) => c.id.startsWith('toolu_'))).toBe(true);
    const sent = vendor.requests[1]!.body as Sent;
    expect(sent.tools).toEqual([
      {
        name: 'check_table',
        description: 'Whether a table is free',
        input_schema: { type: 'object', properties: { people: { type: 'integer' } }, required: ['people'] },
      },
      { name: 'get_hours', description: 'Opening hours', input_schema: { type: 'object', properties: {} } },
    ]);
    expect(sent.messages.slice(1)).toEqual([
      {
        role: 'assistant',
        content: [
          { type: 'text', text: 'One moment.' },
          { type: 'tool_use', id: calls[0]!.id, name: 'check_table', input: { people: 2 } },
          { type: 'tool_use', id: calls[1]!.id, name: 'get_hours', input: {} },
        ],
      },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: calls[0]!.id, content: '{"free":true}' },
          { type: 'tool_result', tool_use_id: calls[1]!.id, content: '{"hours":"12-23"}' },
        ],
      },
    ]);
  });

  it('a late result joins the others ahead of what the caller said after the calls', async () => {
    const { vendor, llm } = await start();
    const { calls } = await runToolRound(llm, { callerSpokeBetween: true });
    expect(vendor.requests[1]!.status).toBe(200);
    const sent = vendor.requests[1]!.body as Sent;
    expect(sent.messages.at(-1)).toEqual({
      role: 'user',
      content: [
        { type: 'tool_result', tool_use_id: calls[0]!.id, content: '{"free":true}' },
        { type: 'tool_result', tool_use_id: calls[1]!.id, content: '{"hours":"12-23"}' },
        { type: 'text', text: 'Monday, please.' },
      ],
    });
  });

  it('a call the bot made first, with no result, still gets one; the call opens after the call-start turn', async () => {
    const { vendor, llm } = await start();
    await collectDeltas(llm, {
      messages: [
        {
          role: 'assistant',
          content: 'Hello!',
          toolCalls: [{ id: 'toolu_x', name: 'get_hours', argumentsJson: 'oops' }],
        },
        { role: 'user', content: 'Hi' },
      ],
      tools: [{ type: 'function', function: { name: 'get_hours' } }],
    });
    expect(vendor.requests[0]!.status).toBe(200);
    expect((vendor.requests[0]!.body as Sent).messages).toEqual([
      { role: 'user', content: CALL_START_TURN },
      {
        role: 'assistant',
        content: [
          { type: 'text', text: 'Hello!' },
          { type: 'tool_use', id: 'toolu_x', name: 'get_hours', input: {} },
        ],
      },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 'toolu_x', content: MISSING_RESULT_JSON },
          { type: 'text', text: 'Hi' },
        ],
      },
    ]);
  });

  it('the emulator refuses tool blocks out of place, as Anthropic does', async () => {
    const { url } = await start();
    const post = async (body: Record<string, unknown>) => {
      const res = await fetch(`${url}/v1/messages`, {
        method: 'POST',
        headers: { 'x-api-key': KEY, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'claude-haiku-4-5', max_tokens: 100, ...body }),
      });
      return { status: res.status, message: ((await res.json()) as { error?: { message: string } }).error?.message };
    };
    const tools = [{ name: 'get_hours', input_schema: { type: 'object' } }];
    const use = { type: 'tool_use', id: 'toolu_1', name: 'get_hours', input: {} };
    const result = { type: 'tool_result', tool_use_id: 'toolu_1', content: '{}' };
    const unanswered = await post({
      tools,
      messages: [
        { role: 'user', content: 'Hi' },
        { role: 'assistant', content: [use] },
        { role: 'user', content: 'Hello?' },
      ],
    });
    expect(unanswered).toEqual({
      status: 400,
      message:
        'messages.2: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_1. Each `tool_use` block must have a corresponding `tool_result` block in the next message.',
    });
    const textFirst = await post({
      tools,
      messages: [
        { role: 'user', content: 'Hi' },
        { role: 'assistant', content: [use] },
        { role: 'user', content: [{ type: 'text', text: 'Hello?' }, result] },
      ],
    });
    expect(textFirst.message).toMatch(/tool_result` blocks must come first/);
    const noTools = await post({
      messages: [
        { role: 'user', content: 'Hi' },
        { role: 'assistant', content: [use] },
        { role: 'user', content: [result] },
      ],
    });
    expect(noTools.message).toBe('Requests which include `tool_use` or `tool_result` blocks must define tools.');
    const noSchema = await post({ tools: [{ name: 'get_hours' }], messages: [{ role: 'user', content: 'Hi' }] });
    expect(noSchema.status).toBe(400);
  });
});
