import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { AnthropicEmulator, type AnthropicEmulatorOptions } from '../../../tools/emulators/anthropic-emulator.js';
import { type RunningEmulators, startEmulatorServer } from '../../../tools/emulators/emulator-server.js';
import type { ProviderSettings } from '../../registry.js';
import type { LlmDelta, LlmProvider, LlmRequest } from '../../types.js';
import { CALL_START_TURN } from '../llm-http.js';
import { createAnthropicLlm, toAnthropicMessages } from './index.js';
import {
  context,
  providerFailure as failure,
  textOf as text,
  EMULATOR_ENV,
} from '../../../../test/helpers/provider-kit.js';

const KEY = 'sk-ant-test-0123456789';
const FAST = { llmFirstTokenMs: 1, llmTokensPerSec: 2000 };

let server: RunningEmulators;
let emulator: AnthropicEmulator;

async function start(options: AnthropicEmulatorOptions = {}): Promise<void> {
  await server?.close();
  emulator = new AnthropicEmulator({ latencies: FAST, apiKey: KEY, ...options });
  server = await startEmulatorServer([emulator]);
}

beforeEach(() => start());
afterEach(() => server.close());

function settings(over: Partial<ProviderSettings> = {}): ProviderSettings {
  return { options: {}, apiKey: KEY, serviceOptions: { base_url: server.url }, env: EMULATOR_ENV, ...over };
}

const hello: LlmRequest = {
  messages: [
    { role: 'system', content: 'Be brief.' },
    { role: 'user', content: 'What time do you open?' },
  ],
};

async function collect(llm: LlmProvider, request: LlmRequest = hello, ctx = context()): Promise<LlmDelta[]> {
  const out: LlmDelta[] = [];
  for await (const delta of llm.complete(request, ctx)) out.push(delta);
  return out;
}

describe('Anthropic LLM against the emulator', () => {
  it('sends the exact request: path, headers, system on top, merged turns, user first, image block', async () => {
    const llm = createAnthropicLlm(
      settings({
        options: { model: 'claude-sonnet-4-0', temperature: 0.4, max_tokens: 300 },
        serviceOptions: { base_url: server.url, timeout_ms: 5000, top_k: 5 },
      }),
    );
    const request: LlmRequest = {
      messages: [
        { role: 'system', content: 'You are a phone agent.' },
        { role: 'system', content: 'Keep answers short.' },
        { role: 'assistant', content: 'Hello, thanks for calling.' },
        { role: 'user', content: 'Hi.' },
        { role: 'user', content: 'Look at this.', imageBase64: 'iVBORw0KGgoAAA' },
        { role: 'assistant', content: '' },
        { role: 'user', content: 'Well?' },
      ],
    };
    expect(text(await collect(llm, request))).toBe('You said: Hi. Look at this. Well?');
    const recorded = emulator.requests[0]!;
    expect(recorded.path).toBe('/v1/messages');
    expect(recorded.status).toBe(200);
    expect(recorded.headers['x-api-key']).toBe('[redacted]');
    expect(recorded.headers['anthropic-version']).toBe('2023-06-01');
    expect(recorded.headers['content-type']).toBe('application/json');
    expect(recorded.headers.authorization).toBeUndefined();
    expect(recorded.body).toEqual({
      model: 'claude-sonnet-4-0',
      max_tokens: 300,
      temperature: 0.4,
      top_k: 5,
      stream: true,
      system: 'You are a phone agent.\n\nKeep answers short.',
      messages: [
        { role: 'user', content: CALL_START_TURN },
        { role: 'assistant', content: 'Hello, thanks for calling.' },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'Hi.' },
            { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgoAAA' } },
            { type: 'text', text: 'Look at this.' },
            { type: 'text', text: 'Well?' },
          ],
        },
      ],
    });
  });

  it('uses the default model and max_tokens, and clamps temperature to 1', async () => {
    await collect(createAnthropicLlm(settings({ options: { temperature: 1.7 } })));
    expect(emulator.requests[0]!.body).toMatchObject({
      model: 'claude-3-5-haiku-latest',
      max_tokens: 1024,
      temperature: 1,
    });
  });

  it('a system-only conversation (the bot greets first) gets a user turn', async () => {
    await start({ replies: ['Hello! Thanks for calling.'] });
    const deltas = await collect(createAnthropicLlm(settings()), {
      messages: [{ role: 'system', content: 'Greet the caller.' }],
    });
    expect(text(deltas)).toBe('Hello! Thanks for calling.');
    expect(emulator.requests[0]!.body).toMatchObject({
      system: 'Greet the caller.',
      messages: [{ role: 'user', content: CALL_START_TURN }],
    });
  });

  it('merges consecutive text-only turns into one string', () => {
    const mapped = toAnthropicMessages([
      { role: 'user', content: 'one' },
      { role: 'user', content: 'two' },
      { role: 'assistant', content: 'three' },
      { role: 'assistant', content: '   ' },
    ]);
    expect(mapped).toEqual({
      system: undefined,
      messages: [
        { role: 'user', content: 'one\ntwo' },
        { role: 'assistant', content: 'three' },
      ],
    });
  });

  it('streams the text deltas in order', async () => {
    await start({ replies: ['We open at nine, and close at five.'] });
    const deltas = await collect(createAnthropicLlm(settings()));
    expect(deltas.length).toBeGreaterThan(3);
    expect(text(deltas)).toBe('We open at nine, and close at five.');
  });

  it('converts OpenAI-shaped tools and assembles tool_use blocks', async () => {
    await start({
      replies: [
        { text: 'Checking.', toolCalls: [{ name: 'get_hours', argumentsJson: '{"day":"monday","detail":"full"}' }] },
      ],
    });
    const tools = [
      {
        type: 'function',
        function: {
          name: 'get_hours',
          description: 'Opening hours',
          parameters: { type: 'object', properties: { day: { type: 'string' } } },
        },
      },
      { name: 'hang_up', description: 'End the call', input_schema: { type: 'object', properties: {} } },
    ];
    const deltas = await collect(createAnthropicLlm(settings()), { ...hello, tools });
    expect((emulator.requests[0]!.body as { tools: unknown }).tools).toEqual([
      {
        name: 'get_hours',
        description: 'Opening hours',
        input_schema: { type: 'object', properties: { day: { type: 'string' } } },
      },
      { name: 'hang_up', description: 'End the call', input_schema: { type: 'object', properties: {} } },
    ]);
    expect(deltas).toEqual([
      ...deltas.filter((d) => d.type === 'text'),
      {
        type: 'tool-call',
        id: expect.stringMatching(/^toolu_/),
        name: 'get_hours',
        argumentsJson: '{"day":"monday","detail":"full"}',
      },
    ]);
    expect(text(deltas)).toBe('Checking.');
  });

  it('stops on abort mid-stream: nothing yielded after, and the server sees the disconnect', async () => {
    await start({
      latencies: { llmFirstTokenMs: 1, llmTokensPerSec: 20 },
      replies: ['one two three four five six seven eight nine ten eleven twelve'],
    });
    const abort = new AbortController();
    const seen: LlmDelta[] = [];
    for await (const delta of createAnthropicLlm(settings()).complete(hello, context(abort.signal))) {
      seen.push(delta);
      if (seen.length === 2) abort.abort();
    }
    expect(seen.length).toBe(2);
    await vi.waitFor(() => expect(emulator.stats.abortedByClient).toBe(1));
  });

  it('401 is not retryable and carries the vendor text', async () => {
    const err = await failure(collect(createAnthropicLlm(settings({ apiKey: 'sk-ant-wrong-999' }))));
    expect(err.retryable).toBe(false);
    expect(err.message).toContain('HTTP 401');
    expect(err.message).toContain('authentication_error: invalid x-api-key');
    expect(err.message).not.toContain('sk-ant-wrong-999');
  });

  it.each([500, 429, 529])('HTTP %i is retryable', async (status) => {
    emulator.faults.next({ kind: 'reject', status });
    const err = await failure(collect(createAnthropicLlm(settings())));
    expect(err.retryable).toBe(true);
    expect(err.message).toContain(`HTTP ${status}`);
  });

  it('a server that never answers times out with a retryable error', async () => {
    emulator.faults.next({ kind: 'hang' });
    const err = await failure(
      collect(createAnthropicLlm(settings({ serviceOptions: { base_url: server.url, timeout_ms: 150 } }))),
    );
    expect(err.retryable).toBe(true);
    expect(err.message).toMatch(/no response within 150 ms/);
  });

  it('a stream that stalls mid-way times out', async () => {
    // A second, not less: the headers and the first tokens must come before it even on a
    // saturated machine, so that only the stall can end the request.
    emulator.faults.next({ kind: 'stall', afterTokens: 2 });
    const seen: LlmDelta[] = [];
    const llm = createAnthropicLlm(settings({ serviceOptions: { base_url: server.url, timeout_ms: 1000 } }));
    const err = await failure(
      (async () => {
        for await (const delta of llm.complete(hello, context())) seen.push(delta);
      })(),
    );
    expect(err.retryable).toBe(true);
    expect(err.message).toMatch(/stalled for 1000 ms/);
    expect(text(seen)).toBe('You said: ');
  });

  it('an error event becomes a ProviderError (overloaded: retryable)', async () => {
    emulator.faults.next({ kind: 'error', afterTokens: 1 });
    const err = await failure(collect(createAnthropicLlm(settings())));
    expect(err.message).toContain('overloaded_error: Overloaded');
    expect(err.retryable).toBe(true);
  });

  it('skips a malformed event and keeps going', async () => {
    emulator.faults.next({ kind: 'malformed', afterTokens: 2 });
    expect(text(await collect(createAnthropicLlm(settings())))).toBe('You said: What time do you open?');
  });

  it('a missing key fails in the factory', () => {
    expect(() => createAnthropicLlm(settings({ apiKey: undefined }))).toThrow(/api_keys\.anthropic.*ANTHROPIC_API_KEY/);
  });

  it('reads SWITCHBOARD_ANTHROPIC_URL', async () => {
    await collect(
      createAnthropicLlm({
        options: {},
        apiKey: KEY,
        serviceOptions: {},
        env: { SWITCHBOARD_ANTHROPIC_URL: server.url },
      }),
    );
    expect(emulator.requests[0]!.status).toBe(200);
  });
});

describe('Anthropic emulator', () => {
  async function post(
    body: unknown,
    headers: Record<string, string> = { 'x-api-key': KEY, 'anthropic-version': '2023-06-01' },
  ): Promise<Response> {
    return fetch(`${server.url}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body),
    });
  }

  it('refuses a bad body with 400 in the Anthropic error shape', async () => {
    const res = await post({ model: 'm', messages: [{ role: 'user', content: 'hi' }] });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({
      type: 'error',
      error: { type: 'invalid_request_error', message: expect.stringContaining('max_tokens') },
    });
  });

  it('holds requests to alternation and a first user message', async () => {
    const first = await post({ model: 'm', max_tokens: 10, messages: [{ role: 'assistant', content: 'hi' }] });
    expect(((await first.json()) as { error: { message: string } }).error.message).toMatch(
      /first message must use the "user" role/,
    );
    const twice = await post({
      model: 'm',
      max_tokens: 10,
      messages: [
        { role: 'user', content: 'a' },
        { role: 'user', content: 'b' },
      ],
    });
    expect(((await twice.json()) as { error: { message: string } }).error.message).toMatch(/alternate/);
  });

  it('checks x-api-key and anthropic-version', async () => {
    const body = { model: 'm', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] };
    expect((await post(body, { 'anthropic-version': '2023-06-01' })).status).toBe(401);
    expect((await post(body, { 'x-api-key': KEY })).status).toBe(400);
  });

  it('streams event/data pairs from message_start to message_stop, with no [DONE]', async () => {
    await start({ replies: ['Hi there.'] });
    const res = await post({
      model: 'claude-x',
      max_tokens: 10,
      stream: true,
      messages: [{ role: 'user', content: 'hi' }],
    });
    const raw = await res.text();
    expect(raw).not.toContain('[DONE]');
    const events = raw
      .split('\n\n')
      .filter(Boolean)
      .map((block) => {
        const [eventLine, dataLine] = block.split('\n');
        const type = eventLine!.replace('event: ', '');
        const data = JSON.parse(dataLine!.replace('data: ', '')) as { type: string };
        expect(data.type).toBe(type);
        return type;
      });
    expect(events).toEqual([
      'message_start',
      'ping',
      'content_block_start',
      'content_block_delta',
      'content_block_delta',
      'content_block_stop',
      'message_delta',
      'message_stop',
    ]);
  });

  it('answers a non-streaming request with one message', async () => {
    const res = await post({ model: 'claude-x', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] });
    expect(await res.json()).toMatchObject({
      type: 'message',
      role: 'assistant',
      content: [{ type: 'text', text: 'You said: hi' }],
      stop_reason: 'end_turn',
    });
  });
});
