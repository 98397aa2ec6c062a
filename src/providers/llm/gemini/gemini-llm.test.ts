import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { type RunningEmulators, startEmulatorServer } from '../../../tools/emulators/emulator-server.js';
import { GeminiEmulator, type GeminiEmulatorOptions } from '../../../tools/emulators/gemini-emulator.js';
import type { ProviderSettings } from '../../registry.js';
import type { LlmDelta, LlmMessage, LlmProvider, LlmRequest } from '../../types.js';
import { CALL_START_TURN } from '../llm-http.js';
import { createGeminiLlm, toGeminiContents } from './index.js';
import {
  context,
  providerFailure as failure,
  textOf as text,
  EMULATOR_ENV,
} from '../../../../test/helpers/provider-kit.js';

const KEY = 'AIza-test-0123456789';
const FAST = { llmFirstTokenMs: 1, llmTokensPerSec: 2000 };

let server: RunningEmulators;
let emulator: GeminiEmulator;

async function start(options: GeminiEmulatorOptions = {}): Promise<void> {
  await server?.close();
  emulator = new GeminiEmulator({ latencies: FAST, apiKey: KEY, ...options });
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

describe('Gemini LLM against the emulator', () => {
  it('sends the exact request: path, key header, systemInstruction, model role, merged turns, inlineData', async () => {
    const llm = createGeminiLlm(
      settings({
        options: { model: 'gemini-2.5-flash', temperature: 0.2, max_tokens: 256 },
        serviceOptions: { base_url: server.url, timeout_ms: 5000, generationConfig: { topK: 4 }, safetySettings: [] },
      }),
    );
    const request: LlmRequest = {
      messages: [
        { role: 'system', content: 'You are a phone agent.' },
        { role: 'assistant', content: 'Hello, thanks for calling.' },
        { role: 'assistant', content: 'How can I help?' },
        { role: 'user', content: 'What is this?', imageBase64: '/9j/4AAQSkZJRg' },
        { role: 'user', content: 'Hello?' },
      ],
    };
    expect(text(await collect(llm, request))).toBe('You said: What is this? Hello?');
    const recorded = emulator.requests[0]!;
    expect(recorded.path).toBe('/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse');
    expect(recorded.headers['x-goog-api-key']).toBe('[redacted]');
    expect(recorded.headers['content-type']).toBe('application/json');
    expect(recorded.status).toBe(200);
    expect(recorded.body).toEqual({
      generationConfig: { temperature: 0.2, maxOutputTokens: 256, topK: 4 },
      safetySettings: [],
      systemInstruction: { parts: [{ text: 'You are a phone agent.' }] },
      contents: [
        { role: 'user', parts: [{ text: CALL_START_TURN }] },
        { role: 'model', parts: [{ text: 'Hello, thanks for calling.' }, { text: 'How can I help?' }] },
        {
          role: 'user',
          parts: [
            { inlineData: { mimeType: 'image/jpeg', data: '/9j/4AAQSkZJRg' } },
            { text: 'What is this?' },
            { text: 'Hello?' },
          ],
        },
      ],
    });
  });

  it('uses gemini-2.0-flash by default and sends no generationConfig without options', async () => {
    await collect(createGeminiLlm(settings()));
    expect(emulator.requests[0]!.path).toBe('/v1beta/models/gemini-2.0-flash:streamGenerateContent?alt=sse');
    expect(emulator.requests[0]!.body).not.toHaveProperty('generationConfig');
  });

  it('a system-only conversation gets a user turn', () => {
    expect(toGeminiContents([{ role: 'system', content: 'Greet.' }])).toEqual({
      systemInstruction: { parts: [{ text: 'Greet.' }] },
      contents: [{ role: 'user', parts: [{ text: CALL_START_TURN }] }],
    });
  });

  it('streams the text deltas in order', async () => {
    await start({ replies: ['We open at nine, and close at five.'] });
    const deltas = await collect(createGeminiLlm(settings()));
    expect(deltas.length).toBeGreaterThan(3);
    expect(text(deltas)).toBe('We open at nine, and close at five.');
  });

  it('converts OpenAI-shaped tools to functionDeclarations and yields function calls', async () => {
    await start({
      replies: [
        {
          text: 'Checking.',
          toolCalls: [
            { name: 'get_hours', argumentsJson: '{"day":"monday"}' },
            { name: 'hang_up', argumentsJson: '{}' },
          ],
        },
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
      { googleSearch: {} },
    ];
    const deltas = await collect(createGeminiLlm(settings()), { ...hello, tools });
    expect((emulator.requests[0]!.body as { tools: unknown }).tools).toEqual([
      {
        functionDeclarations: [
          {
            name: 'get_hours',
            description: 'Opening hours',
            parameters: { type: 'object', properties: { day: { type: 'string' } } },
          },
        ],
      },
      { googleSearch: {} },
    ]);
    expect(text(deltas)).toBe('Checking.');
    expect(deltas.filter((d) => d.type === 'tool-call')).toEqual([
      {
        type: 'tool-call',
        id: expect.stringMatching(/^sbcall_/),
        name: 'get_hours',
        argumentsJson: '{"day":"monday"}',
      },
      { type: 'tool-call', id: expect.stringMatching(/^sbcall_/), name: 'hang_up', argumentsJson: '{}' },
    ]);
  });

  it('Gemini 3: the thought signature on a function call goes back with it; a history without it is refused', async () => {
    await start({
      replies: [
        {
          toolCalls: [
            { name: 'check_table', argumentsJson: '{"people":2}' },
            { name: 'get_hours', argumentsJson: '{}' },
          ],
        },
      ],
      afterToolResults: (results) => `Done: ${results.map((r) => r.name).join(', ')}`,
    });
    const llm = createGeminiLlm(settings({ options: { model: 'gemini-3-flash-preview' } }));
    const calls = (await collect(llm)).filter((d) => d.type === 'tool-call');
    // Parallel calls: the model signs the first only.
    expect(calls[0]!.thoughtSignature).toMatch(/^[A-Za-z0-9+/]{20,}={0,2}$/);
    expect(calls[1]!.thoughtSignature).toBeUndefined();
    const toolCalls = calls.map(({ type: _type, ...call }) => call);
    const answered = (signed: typeof toolCalls): LlmRequest => ({
      messages: [
        ...hello.messages,
        { role: 'assistant', content: '', toolCalls: signed },
        ...signed.map((call) => ({
          role: 'tool' as const,
          toolCallId: call.id,
          toolName: call.name,
          content: '{"ok":true}',
        })),
      ],
    });
    expect(text(await collect(llm, answered(toolCalls)))).toBe('Done: check_table, get_hours');
    const sent = (emulator.requests[1]!.body as { contents: Array<{ parts: Array<Record<string, unknown>> }> })
      .contents[1]!.parts;
    expect(sent[0]).toEqual({
      functionCall: { name: 'check_table', args: { people: 2 } },
      thoughtSignature: calls[0]!.thoughtSignature,
    });
    expect(sent[1]).toEqual({ functionCall: { name: 'get_hours', args: {} } });

    const unsigned = toolCalls.map(({ thoughtSignature: _signature, ...call }) => call);
    const err = await failure(collect(llm, answered(unsigned)));
    expect(err.message).toContain('HTTP 400');
    expect(err.message).toContain('Function call is missing a thought_signature in functionCall parts');
    expect(err.message).toContain('`default_api:check_table` , position 2');
    const forged = await failure(
      collect(llm, answered(toolCalls.map((c) => ({ ...c, thoughtSignature: 'Zm9yZ2Vk' })))),
    );
    expect(forged.message).toContain('Corrupted thought signature.');
  });

  it('Gemini 3 checks only the current turn, and Gemini 2.5 does not check at all', async () => {
    const unsignedTurn: LlmMessage[] = [
      { role: 'user', content: 'When do you open?' },
      { role: 'assistant', content: '', toolCalls: [{ id: 'sbcall_1', name: 'get_hours', argumentsJson: '{}' }] },
      { role: 'tool', toolCallId: 'sbcall_1', toolName: 'get_hours', content: '{"open":"9"}' },
      { role: 'assistant', content: 'At nine.' },
    ];
    const gemini3 = createGeminiLlm(settings({ options: { model: 'gemini-3-pro-preview' } }));
    // An unsigned call in an earlier turn (the caller spoke since) is not checked.
    expect(text(await collect(gemini3, { messages: [...unsignedTurn, { role: 'user', content: 'Thanks.' }] }))).toBe(
      'You said: Thanks.',
    );
    const gemini25 = createGeminiLlm(settings({ options: { model: 'gemini-2.5-flash' } }));
    expect(text(await collect(gemini25, { messages: unsignedTurn.slice(0, 3) }))).not.toBe('');
    expect(emulator.requests.map((r) => r.status)).toEqual([200, 200]);
  });

  it('stops on abort mid-stream: nothing yielded after, and the server sees the disconnect', async () => {
    await start({
      latencies: { llmFirstTokenMs: 1, llmTokensPerSec: 20 },
      replies: ['one two three four five six seven eight nine ten eleven twelve'],
    });
    const abort = new AbortController();
    const seen: LlmDelta[] = [];
    for await (const delta of createGeminiLlm(settings()).complete(hello, context(abort.signal))) {
      seen.push(delta);
      if (seen.length === 2) abort.abort();
    }
    expect(seen.length).toBe(2);
    await vi.waitFor(() => expect(emulator.stats.abortedByClient).toBe(1));
  });

  it('a wrong key (400 API_KEY_INVALID) is not retryable and says why', async () => {
    const err = await failure(collect(createGeminiLlm(settings({ apiKey: 'AIza-wrong-999' }))));
    expect(err.retryable).toBe(false);
    expect(err.message).toContain('HTTP 400');
    expect(err.message).toContain('API key not valid');
    expect(err.message).not.toContain('AIza-wrong-999');
  });

  it('401 is not retryable', async () => {
    emulator.faults.next({ kind: 'reject', status: 401 });
    const err = await failure(collect(createGeminiLlm(settings())));
    expect(err.retryable).toBe(false);
    expect(err.message).toContain('HTTP 401: UNAUTHENTICATED');
  });

  it.each([500, 429, 503])('HTTP %i is retryable', async (status) => {
    emulator.faults.next({ kind: 'reject', status });
    const err = await failure(collect(createGeminiLlm(settings())));
    expect(err.retryable).toBe(true);
    expect(err.message).toContain(`HTTP ${status}`);
  });

  it('a server that never answers times out with a retryable error', async () => {
    emulator.faults.next({ kind: 'hang' });
    const err = await failure(
      collect(createGeminiLlm(settings({ serviceOptions: { base_url: server.url, timeout_ms: 150 } }))),
    );
    expect(err.retryable).toBe(true);
    expect(err.message).toMatch(/no response within 150 ms/);
  });

  it('a stream that stalls mid-way times out', async () => {
    // A second, not less: the headers and the first tokens must come before it even on a
    // saturated machine, so that only the stall can end the request.
    emulator.faults.next({ kind: 'stall', afterTokens: 2 });
    const seen: LlmDelta[] = [];
    const llm = createGeminiLlm(settings({ serviceOptions: { base_url: server.url, timeout_ms: 1000 } }));
    const err = await failure(
      (async () => {
        for await (const delta of llm.complete(hello, context())) seen.push(delta);
      })(),
    );
    expect(err.retryable).toBe(true);
    expect(err.message).toMatch(/stalled for 1000 ms/);
    expect(text(seen)).toBe('You said: ');
  });

  it('an error object inside the stream becomes a ProviderError', async () => {
    emulator.faults.next({ kind: 'error', afterTokens: 1 });
    const err = await failure(collect(createGeminiLlm(settings())));
    expect(err.message).toContain('UNAVAILABLE: The model is overloaded');
    expect(err.retryable).toBe(true);
  });

  it('skips a malformed event and keeps going', async () => {
    emulator.faults.next({ kind: 'malformed', afterTokens: 1 });
    expect(text(await collect(createGeminiLlm(settings())))).toBe('You said: What time do you open?');
  });

  it('a reply withheld by safety filters is an error, not silence', async () => {
    const raw = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end(`data: ${JSON.stringify({ candidates: [{ finishReason: 'SAFETY', index: 0 }] })}\r\n\r\n`);
    });
    // Every interface, reached by name: what a customer's base_url looks like.
    await new Promise<void>((resolve) => raw.listen(0, resolve));
    try {
      const { port } = raw.address() as AddressInfo;
      const err = await failure(
        collect(createGeminiLlm(settings({ serviceOptions: { base_url: `http://localhost:${port}` } }))),
      );
      expect(err.message).toBe('gemini: the reply was blocked: SAFETY');
      expect(err.retryable).toBe(false);
    } finally {
      await new Promise((resolve) => raw.close(resolve));
    }
  });

  it('a missing key fails in the factory', () => {
    expect(() => createGeminiLlm(settings({ apiKey: undefined }))).toThrow(/api_keys\.gemini.*GEMINI_API_KEY/);
  });

  it('reads SWITCHBOARD_GEMINI_URL and tolerates a base ending in /v1beta', async () => {
    await collect(
      createGeminiLlm({
        options: {},
        apiKey: KEY,
        serviceOptions: {},
        env: { SWITCHBOARD_GEMINI_URL: `${server.url}/v1beta` },
      }),
    );
    expect(emulator.requests[0]!.path).toBe('/v1beta/models/gemini-2.0-flash:streamGenerateContent?alt=sse');
  });
});

describe('Gemini emulator', () => {
  const url = () => `${server.url}/v1beta/models/gemini-2.0-flash:streamGenerateContent?alt=sse`;
  async function post(
    body: unknown,
    headers: Record<string, string> = { 'x-goog-api-key': KEY },
    target = url(),
  ): Promise<Response> {
    return fetch(target, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body),
    });
  }
  const ok = { contents: [{ role: 'user', parts: [{ text: 'hi' }] }] };

  it('refuses a bad body with 400 in the Google error shape', async () => {
    const res = await post({ contents: [] });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ error: { code: 400, status: 'INVALID_ARGUMENT' } });
    const twice = await post({
      contents: [
        { role: 'user', parts: [{ text: 'a' }] },
        { role: 'user', parts: [{ text: 'b' }] },
      ],
    });
    expect(((await twice.json()) as { error: { message: string } }).error.message).toMatch(/alternate/);
  });

  it('answers a missing key with 403 PERMISSION_DENIED, and accepts ?key=', async () => {
    expect((await post(ok, {})).status).toBe(403);
    const res = await post(ok, {}, `${url()}&key=${KEY}`);
    expect(res.status).toBe(200);
    await res.text();
    expect(emulator.requests.at(-1)!.path).toBe(
      '/v1beta/models/gemini-2.0-flash:streamGenerateContent?alt=sse&key=[redacted]',
    );
  });

  it('streams data-only events, the last with finishReason and usage', async () => {
    await start({ replies: ['Hi there.'] });
    const raw = await (await post(ok)).text();
    const events = raw
      .split('\r\n\r\n')
      .filter(Boolean)
      .map(
        (block) =>
          JSON.parse(block.replace(/^data: /, '')) as {
            candidates: Array<{ content: { parts: Array<{ text: string }> }; finishReason?: string }>;
            usageMetadata: Record<string, number>;
          },
      );
    expect(events.map((e) => e.candidates[0]!.content.parts[0]!.text)).toEqual(['Hi ', 'there.']);
    expect(events[0]!.candidates[0]!.finishReason).toBeUndefined();
    expect(events[1]!.candidates[0]!.finishReason).toBe('STOP');
    expect(events[1]!.usageMetadata.candidatesTokenCount).toBe(2);
  });

  it('answers generateContent and non-SSE streaming with JSON', async () => {
    const unary = await post(ok, undefined, `${server.url}/v1beta/models/gemini-2.0-flash:generateContent`);
    expect(await unary.json()).toMatchObject({
      candidates: [{ content: { parts: [{ text: 'You said: hi' }], role: 'model' }, finishReason: 'STOP' }],
    });
    const array = await post(ok, undefined, `${server.url}/v1beta/models/gemini-2.0-flash:streamGenerateContent`);
    const chunks = (await array.json()) as unknown[];
    expect(Array.isArray(chunks)).toBe(true);
    expect(chunks.length).toBe(3);
  });
});
