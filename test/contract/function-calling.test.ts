import Anthropic from '@anthropic-ai/sdk';
import { type Content, GoogleGenAI } from '@google/genai';
import OpenAI from 'openai';
import { afterEach, describe, expect, it } from 'vitest';
import { AnthropicEmulator } from '../../src/tools/emulators/anthropic-emulator.js';
import { GeminiEmulator } from '../../src/tools/emulators/gemini-emulator.js';
import type { EmulatedReply, EmulatedToolResult } from '../../src/tools/emulators/llm-emulator-base.js';
import { OpenAiEmulator } from '../../src/tools/emulators/openai-emulator.js';
import { API_KEY, CONTRACT_LATENCIES, type Vendors, startVendors } from './vendors.js';

/**
 * Function calling, judged by each vendor's own SDK: parallel calls in one streamed answer as the
 * SDK assembles them, the conversation sent back in the SDK's own types with the results (which
 * the emulator answers), and the vendor's 400 when a call is left without its result.
 */

const PARALLEL: EmulatedReply = {
  text: 'Let me check.',
  toolCalls: [
    { name: 'check_table', argumentsJson: '{"people":2,"time":"19:00"}' },
    { name: 'get_hours', argumentsJson: '{"day":"monday"}' },
  ],
};
const afterToolResults = (results: EmulatedToolResult[]) =>
  `Done: ${results.map((r) => `${r.name} ${r.content}`).join(', ')}`;

let vendors: Vendors | undefined;
afterEach(async () => {
  await vendors?.close();
  vendors = undefined;
});

const openAiTools: OpenAI.ChatCompletionTool[] = [
  {
    type: 'function',
    function: {
      name: 'check_table',
      parameters: { type: 'object', properties: { people: { type: 'integer' }, time: { type: 'string' } } },
    },
  },
  { type: 'function', function: { name: 'get_hours', parameters: { type: 'object', properties: {} } } },
];

describe('function calling as the vendors SDKs see it', () => {
  it('openai: two parallel calls, the tool messages back, the answer; a missing result is a BadRequestError', async () => {
    const emulator = new OpenAiEmulator({
      latencies: CONTRACT_LATENCIES,
      apiKey: API_KEY,
      replies: [PARALLEL],
      afterToolResults,
    });
    vendors = await startVendors({ emulators: [emulator] });
    const client = new OpenAI({ apiKey: API_KEY, baseURL: `${vendors.baseUrl}/v1`, maxRetries: 0 });
    const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'Table for two on Monday?' }];
    const completion = await client.chat.completions
      .stream({ model: 'gpt-4o-mini', messages, tools: openAiTools })
      .finalChatCompletion();
    const message = completion.choices[0]!.message;
    expect(completion.choices[0]!.finish_reason).toBe('tool_calls');
    const calls = (message.tool_calls ?? []).flatMap((c) => (c.type === 'function' ? [c] : []));
    expect(calls.map((c) => [c.function.name, JSON.parse(c.function.arguments)])).toEqual([
      ['check_table', { people: 2, time: '19:00' }],
      ['get_hours', { day: 'monday' }],
    ]);
    expect(new Set(calls.map((c) => c.id)).size).toBe(2);

    const withCalls: OpenAI.ChatCompletionMessageParam[] = [...messages, message];
    await expect(
      client.chat.completions.create({ model: 'gpt-4o-mini', messages: withCalls, tools: openAiTools }),
    ).rejects.toSatisfy(
      (err) => err instanceof OpenAI.BadRequestError && /did not have response messages/.test(err.message),
    );
    const answered = await client.chat.completions.create({
      model: 'gpt-4o-mini',
      tools: openAiTools,
      messages: [
        ...withCalls,
        { role: 'tool', tool_call_id: calls[1]!.id, content: '{"open":"12-23"}' },
        { role: 'tool', tool_call_id: calls[0]!.id, content: '{"free":true}' },
      ],
    });
    expect(answered.choices[0]!.message.content).toBe('Done: get_hours {"open":"12-23"}, check_table {"free":true}');
    expect(answered.choices[0]!.finish_reason).toBe('stop');
  });

  it('@anthropic-ai/sdk: two tool_use blocks, tool_result blocks back, the answer; a missing result is a BadRequestError', async () => {
    const emulator = new AnthropicEmulator({
      latencies: CONTRACT_LATENCIES,
      apiKey: API_KEY,
      replies: [PARALLEL],
      afterToolResults,
    });
    vendors = await startVendors({ emulators: [emulator] });
    const client = new Anthropic({ apiKey: API_KEY, baseURL: vendors.baseUrl, maxRetries: 0 });
    const tools: Anthropic.Tool[] = [
      { name: 'check_table', input_schema: { type: 'object', properties: { people: { type: 'integer' } } } },
      { name: 'get_hours', input_schema: { type: 'object', properties: {} } },
    ];
    const messages: Anthropic.MessageParam[] = [{ role: 'user', content: 'Table for two on Monday?' }];
    const first = await client.messages
      .stream({ model: 'claude-haiku-4-5', max_tokens: 256, messages, tools })
      .finalMessage();
    expect(first.stop_reason).toBe('tool_use');
    const uses = first.content.flatMap((b) => (b.type === 'tool_use' ? [b] : []));
    expect(uses.map((u) => [u.name, u.input])).toEqual([
      ['check_table', { people: 2, time: '19:00' }],
      ['get_hours', { day: 'monday' }],
    ]);
    const withCalls: Anthropic.MessageParam[] = [...messages, { role: 'assistant', content: first.content }];
    await expect(
      client.messages.create({
        model: 'claude-haiku-4-5',
        max_tokens: 256,
        tools,
        messages: [...withCalls, { role: 'user', content: 'Hello?' }],
      }),
    ).rejects.toSatisfy(
      (err) =>
        err instanceof Anthropic.BadRequestError && /without `tool_result` blocks immediately after/.test(err.message),
    );
    const answered = await client.messages.create({
      model: 'claude-haiku-4-5',
      max_tokens: 256,
      tools,
      messages: [
        ...withCalls,
        {
          role: 'user',
          content: [
            { type: 'tool_result', tool_use_id: uses[0]!.id, content: '{"free":true}' },
            { type: 'tool_result', tool_use_id: uses[1]!.id, content: '{"open":"12-23"}' },
          ],
        },
      ],
    });
    expect(answered.stop_reason).toBe('end_turn');
    expect(answered.content).toEqual([
      { type: 'text', text: 'Done: check_table {"free":true}, get_hours {"open":"12-23"}' },
    ]);
  });

  it('@google/genai: two functionCalls in the stream, functionResponses back, the answer; a missing response is refused', async () => {
    const emulator = new GeminiEmulator({
      latencies: CONTRACT_LATENCIES,
      apiKey: API_KEY,
      replies: [PARALLEL],
      afterToolResults,
    });
    vendors = await startVendors({ emulators: [emulator] });
    const ai = new GoogleGenAI({ apiKey: API_KEY, httpOptions: { baseUrl: vendors.baseUrl } });
    const config = {
      tools: [
        {
          functionDeclarations: [
            {
              name: 'check_table',
              parametersJsonSchema: { type: 'object', properties: { people: { type: 'integer' } } },
            },
            { name: 'get_hours', parametersJsonSchema: { type: 'object', properties: {} } },
          ],
        },
      ],
    };
    const contents: Content[] = [{ role: 'user', parts: [{ text: 'Table for two on Monday?' }] }];
    const stream = await ai.models.generateContentStream({ model: 'gemini-2.5-flash', contents, config });
    const modelParts: NonNullable<Content['parts']> = [];
    const calls: Array<{ name?: string; args?: Record<string, unknown> }> = [];
    for await (const chunk of stream) {
      modelParts.push(...(chunk.candidates?.[0]?.content?.parts ?? []));
      calls.push(...(chunk.functionCalls ?? []));
    }
    expect(calls.map((c) => [c.name, c.args])).toEqual([
      ['check_table', { people: 2, time: '19:00' }],
      ['get_hours', { day: 'monday' }],
    ]);
    const withCalls: Content[] = [...contents, { role: 'model', parts: modelParts }];
    await expect(
      ai.models.generateContent({
        model: 'gemini-2.5-flash',
        config,
        contents: [
          ...withCalls,
          { role: 'user', parts: [{ functionResponse: { name: 'check_table', response: { free: true } } }] },
        ],
      }),
    ).rejects.toThrow(/number of function response parts/);
    const answered = await ai.models.generateContent({
      model: 'gemini-2.5-flash',
      config,
      contents: [
        ...withCalls,
        {
          role: 'user',
          parts: [
            { functionResponse: { name: 'check_table', response: { free: true } } },
            { functionResponse: { name: 'get_hours', response: { open: '12-23' } } },
          ],
        },
      ],
    });
    expect(answered.text).toBe('Done: check_table {"free":true}, get_hours {"open":"12-23"}');
  });
});

describe('Gemini 3 thought signatures, judged by @google/genai', () => {
  it('the SDK reads the signature on the first call; the model turn sent back whole is accepted, stripped of it refused', async () => {
    const emulator = new GeminiEmulator({
      latencies: CONTRACT_LATENCIES,
      apiKey: API_KEY,
      replies: [PARALLEL],
      afterToolResults,
    });
    vendors = await startVendors({ emulators: [emulator] });
    const ai = new GoogleGenAI({ apiKey: API_KEY, httpOptions: { baseUrl: vendors.baseUrl } });
    const model = 'gemini-3-flash-preview';
    const contents: Content[] = [{ role: 'user', parts: [{ text: 'Table for two on Monday?' }] }];
    const first = await ai.models.generateContent({ model, contents });
    const modelContent = first.candidates![0]!.content!;
    const calls = modelContent.parts!.filter((p) => p.functionCall);
    expect(calls.map((p) => typeof p.thoughtSignature)).toEqual(['string', 'undefined']);
    const responses: Content = {
      role: 'user',
      parts: [
        { functionResponse: { name: 'check_table', response: { free: true } } },
        { functionResponse: { name: 'get_hours', response: { open: '12-23' } } },
      ],
    };
    const answered = await ai.models.generateContent({ model, contents: [...contents, modelContent, responses] });
    expect(answered.text).toBe('Done: check_table {"free":true}, get_hours {"open":"12-23"}');
    const stripped: Content = {
      role: 'model',
      parts: modelContent.parts!.map(({ thoughtSignature: _signature, ...part }) => part),
    };
    await expect(ai.models.generateContent({ model, contents: [...contents, stripped, responses] })).rejects.toThrow(
      /Function call is missing a thought_signature in functionCall parts.*`default_api:check_table` , position 2/,
    );
  });
});
