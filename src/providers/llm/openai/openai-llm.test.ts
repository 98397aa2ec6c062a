import { type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { type RunningEmulators, startEmulatorServer } from '../../../tools/emulators/emulator-server.js';
import { OpenAiEmulator, type OpenAiEmulatorOptions } from '../../../tools/emulators/openai-emulator.js';
import type { ProviderSettings } from '../../registry.js';
import { type LlmDelta, type LlmProvider, type LlmRequest, ProviderError } from '../../types.js';
import { OPENAI_COMPATIBLE, OPENAI_COMPATIBLE_NAMES, createOpenAiCompatibleLlm } from './index.js';
import {
  context,
  providerFailure as failure,
  textOf as text,
  EMULATOR_ENV,
} from '../../../../test/helpers/provider-kit.js';

const KEY = 'sk-test-0123456789';
const FAST = { llmFirstTokenMs: 1, llmTokensPerSec: 2000 };

let server: RunningEmulators;
let emulator: OpenAiEmulator;

async function start(options: OpenAiEmulatorOptions = {}): Promise<void> {
  await server?.close();
  emulator = new OpenAiEmulator({ latencies: FAST, apiKey: KEY, ...options });
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

describe('OpenAI-compatible LLM against the emulator', () => {
  it('sends the exact request: path, headers, body, messages with system and image', async () => {
    const llm = createOpenAiCompatibleLlm(
      'openai',
      settings({
        options: { model: 'gpt-4o', temperature: 0.3, max_tokens: 200 },
        serviceOptions: { base_url: server.url, timeout_ms: 5000, seed: 7, user: 'bot-1' },
      }),
    );
    const request: LlmRequest = {
      messages: [
        { role: 'system', content: 'You are a phone agent.' },
        { role: 'assistant', content: 'Hello, how can I help?' },
        { role: 'user', content: 'What is this?', imageBase64: 'iVBORw0KGgoAAA' },
        { role: 'assistant', content: '' },
        { role: 'user', content: 'And now?', imageBase64: '/9j/4AAQSkZJRg' },
      ],
    };
    await collect(llm, request);
    const recorded = emulator.requests[0]!;
    expect(recorded.method).toBe('POST');
    expect(recorded.path).toBe('/v1/chat/completions');
    expect(recorded.headers.authorization).toBe('[redacted]');
    expect(recorded.headers['content-type']).toBe('application/json');
    expect(recorded.status).toBe(200);
    expect(recorded.body).toEqual({
      model: 'gpt-4o',
      temperature: 0.3,
      max_completion_tokens: 200,
      seed: 7,
      user: 'bot-1',
      stream: true,
      messages: [
        { role: 'system', content: 'You are a phone agent.' },
        { role: 'assistant', content: 'Hello, how can I help?' },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'What is this?' },
            { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgoAAA' } },
          ],
        },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'And now?' },
            { type: 'image_url', image_url: { url: 'data:image/jpeg;base64,/9j/4AAQSkZJRg' } },
          ],
        },
      ],
    });
  });

  it('streams the text deltas in order', async () => {
    await start({ replies: ['We open at nine, and close at five.'] });
    const deltas = await collect(createOpenAiCompatibleLlm('openai', settings()));
    expect(deltas.length).toBeGreaterThan(3);
    expect(deltas.every((d) => d.type === 'text')).toBe(true);
    expect(text(deltas)).toBe('We open at nine, and close at five.');
  });

  it('answers from the last user message by default', async () => {
    expect(text(await collect(createOpenAiCompatibleLlm('openai', settings())))).toBe(
      'You said: What time do you open?',
    );
  });

  it('passes tools through and assembles streamed tool calls', async () => {
    await start({
      replies: [
        {
          text: 'Let me check.',
          toolCalls: [
            { name: 'get_hours', argumentsJson: '{"day":"monday","detail":"full"}' },
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
    ];
    const deltas = await collect(createOpenAiCompatibleLlm('openai', settings()), { ...hello, tools });
    expect((emulator.requests[0]!.body as { tools: unknown }).tools).toEqual(tools);
    expect(text(deltas)).toBe('Let me check.');
    const calls = deltas.filter((d) => d.type === 'tool-call');
    expect(calls).toEqual([
      {
        type: 'tool-call',
        id: expect.stringMatching(/^call_/),
        name: 'get_hours',
        argumentsJson: '{"day":"monday","detail":"full"}',
      },
      { type: 'tool-call', id: expect.stringMatching(/^call_/), name: 'hang_up', argumentsJson: '{}' },
    ]);
    // Tool calls come once complete, after the text.
    expect(deltas.at(-1)!.type).toBe('tool-call');
  });

  it('stops on abort mid-stream: nothing yielded after, and the server sees the disconnect', async () => {
    await start({
      latencies: { llmFirstTokenMs: 1, llmTokensPerSec: 20 },
      replies: ['one two three four five six seven eight nine ten eleven twelve'],
    });
    const llm = createOpenAiCompatibleLlm('openai', settings());
    const abort = new AbortController();
    const seen: LlmDelta[] = [];
    for await (const delta of llm.complete(hello, context(abort.signal))) {
      seen.push(delta);
      if (seen.length === 2) abort.abort();
    }
    expect(seen.length).toBe(2);
    await vi.waitFor(() => expect(emulator.stats.abortedByClient).toBe(1));
    expect(emulator.requests[0]!.abortedByClient).toBe(true);
  });

  it('leaving the loop early closes the connection', async () => {
    await start({
      latencies: { llmFirstTokenMs: 1, llmTokensPerSec: 20 },
      replies: ['one two three four five six seven eight'],
    });
    for await (const delta of createOpenAiCompatibleLlm('openai', settings()).complete(hello, context())) {
      expect(delta.type).toBe('text');
      break;
    }
    await vi.waitFor(() => expect(emulator.stats.abortedByClient).toBe(1));
  });

  it('ends quietly when the signal is already aborted', async () => {
    const abort = new AbortController();
    abort.abort();
    expect(await collect(createOpenAiCompatibleLlm('openai', settings()), hello, context(abort.signal))).toEqual([]);
    expect(emulator.stats.requests).toBe(0);
  });

  it('401 is not retryable, names the status and the vendor text, and hides the key', async () => {
    const err = await failure(collect(createOpenAiCompatibleLlm('openai', settings({ apiKey: 'sk-wrong-key-999' }))));
    expect(err.retryable).toBe(false);
    expect(err.message).toContain('HTTP 401');
    expect(err.message).toContain('Incorrect API key');
    expect(err.message).not.toContain('sk-wrong-key-999');
  });

  it('a vendor error that echoes the key is redacted', async () => {
    emulator.faults.next({
      kind: 'reject',
      status: 403,
      body: { error: { message: `key ${KEY} is blocked`, type: 'forbidden' } },
    });
    const err = await failure(collect(createOpenAiCompatibleLlm('openai', settings())));
    expect(err.retryable).toBe(false);
    expect(err.message).not.toContain(KEY);
    expect(err.message).toContain('[redacted]');
  });

  it.each([500, 429, 503])('HTTP %i is retryable', async (status) => {
    emulator.faults.next({ kind: 'reject', status });
    const err = await failure(collect(createOpenAiCompatibleLlm('openai', settings())));
    expect(err.retryable).toBe(true);
    expect(err.message).toContain(`HTTP ${status}`);
  });

  it.each([400, 404])('HTTP %i is not retryable', async (status) => {
    emulator.faults.next({ kind: 'reject', status });
    expect((await failure(collect(createOpenAiCompatibleLlm('openai', settings())))).retryable).toBe(false);
  });

  it('a server that never answers times out with a retryable error', async () => {
    emulator.faults.next({ kind: 'hang' });
    const llm = createOpenAiCompatibleLlm(
      'openai',
      settings({ serviceOptions: { base_url: server.url, timeout_ms: 150 } }),
    );
    // The server never answers, so only the 150 ms timeout can end the request.
    const err = await failure(collect(llm));
    expect(err.retryable).toBe(true);
    expect(err.message).toMatch(/no response within 150 ms/);
    await vi.waitFor(() => expect(emulator.stats.abortedByClient).toBe(1));
  });

  it('a complete stream without any text or tool call is an empty reply, a retryable failure', async () => {
    await start({ replies: [''] });
    const llm = createOpenAiCompatibleLlm('openai', settings());
    const err = await failure(collect(llm));
    expect(err.retryable).toBe(true);
    expect(err.message).toMatch(/^openai: empty reply/);
  });

  it('headers without any event time out too', async () => {
    // A second, not less: the headers and the first tokens must come before it even on a
    // saturated machine, so that only the stall can end the request.
    emulator.faults.next({ kind: 'stall', afterTokens: 0 });
    const llm = createOpenAiCompatibleLlm(
      'openai',
      settings({ serviceOptions: { base_url: server.url, timeout_ms: 1000 } }),
    );
    const err = await failure(collect(llm));
    expect(err.retryable).toBe(true);
    expect(err.message).toMatch(/no events within 1000 ms/);
  });

  it('a stream that stalls mid-way times out after yielding what came', async () => {
    // A second, not less: the headers and the first tokens must come before it even on a
    // saturated machine, so that only the stall can end the request.
    emulator.faults.next({ kind: 'stall', afterTokens: 2 });
    const llm = createOpenAiCompatibleLlm(
      'openai',
      settings({ serviceOptions: { base_url: server.url, timeout_ms: 1000 } }),
    );
    const seen: LlmDelta[] = [];
    const err = await failure(
      (async () => {
        for await (const delta of llm.complete(hello, context())) seen.push(delta);
      })(),
    );
    expect(err.retryable).toBe(true);
    expect(err.message).toMatch(/stalled for 1000 ms/);
    expect(text(seen)).toBe('You said: ');
  });

  it('an error chunk inside the stream becomes a ProviderError', async () => {
    emulator.faults.next({ kind: 'error', afterTokens: 1 });
    const err = await failure(collect(createOpenAiCompatibleLlm('openai', settings())));
    expect(err.message).toContain('server_error');
    expect(err.retryable).toBe(true);
  });

  it('skips a malformed chunk and keeps going', async () => {
    emulator.faults.next({ kind: 'malformed', afterTokens: 1 });
    expect(text(await collect(createOpenAiCompatibleLlm('openai', settings())))).toBe(
      'You said: What time do you open?',
    );
  });

  it('a refused connection is a retryable network error', async () => {
    const llm = createOpenAiCompatibleLlm('openai', settings({ serviceOptions: { base_url: 'http://127.0.0.1:1' } }));
    const err = await failure(collect(llm));
    expect(err.retryable).toBe(true);
    expect(err.message).toMatch(/request failed/);
  });

  it('a missing key fails in the factory, naming where to set it', () => {
    expect(() => createOpenAiCompatibleLlm('openai', settings({ apiKey: undefined }))).toThrow(
      /api_keys\.openai.*OPENAI_API_KEY/,
    );
    expect(() => createOpenAiCompatibleLlm('groq', settings({ apiKey: '' }))).toThrow(ProviderError);
  });

  it('does not double /v1 when the base already ends with it', async () => {
    await collect(createOpenAiCompatibleLlm('openai', settings({ serviceOptions: { base_url: `${server.url}/v1/` } })));
    expect(emulator.requests[0]!.path).toBe('/v1/chat/completions');
  });
});

/** A one-off server that answers every request with the given status, content type and raw body. */
async function rawServer(
  status: number,
  contentType: string,
  body: string,
): Promise<{ url: string; close: () => Promise<void> }> {
  const raw: Server = createServer((_req, res) => {
    res.writeHead(status, { 'content-type': contentType });
    res.end(body);
  });
  await new Promise<void>((resolve) => raw.listen(0, '127.0.0.1', resolve));
  const { port } = raw.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, close: () => new Promise((resolve) => raw.close(() => resolve())) };
}

describe('OpenAI-compatible servers that differ', () => {
  it('tolerate no role chunk, a whole tool call in one chunk, no id, unknown fields and no [DONE]', async () => {
    const chunks = [
      { choices: [{ delta: { content: 'Sure.' }, x_vendor: 1 }] },
      {
        choices: [
          {
            index: 0,
            delta: { tool_calls: [{ index: 0, function: { name: 'hang_up', arguments: '{"why":"done"}' } }] },
          },
        ],
      },
      { choices: [{ index: 0, delta: {}, finish_reason: 'tool_calls' }], x_groq: { id: 'q' } },
    ];
    const raw = await rawServer(200, 'text/event-stream', chunks.map((c) => `data: ${JSON.stringify(c)}\n\n`).join(''));
    try {
      const llm = createOpenAiCompatibleLlm('ollama', {
        options: {},
        apiKey: undefined,
        serviceOptions: { base_url: raw.url },
        env: EMULATOR_ENV,
      });
      expect(await collect(llm)).toEqual([
        { type: 'text', text: 'Sure.' },
        { type: 'tool-call', id: expect.stringMatching(/^sbcall_/), name: 'hang_up', argumentsJson: '{"why":"done"}' },
      ]);
    } finally {
      await raw.close();
    }
  });

  it('a bare-string error in the stream is a ProviderError', async () => {
    const raw = await rawServer(
      200,
      'text/event-stream',
      'data: {"choices":[{"delta":{"content":"Hi"}}]}\n\ndata: {"error":"model crashed"}\n\n',
    );
    try {
      const llm = createOpenAiCompatibleLlm('ollama', {
        options: {},
        apiKey: undefined,
        serviceOptions: { base_url: raw.url },
        env: EMULATOR_ENV,
      });
      expect((await failure(collect(llm))).message).toBe('ollama: error in stream: model crashed');
    } finally {
      await raw.close();
    }
  });

  it('a whole JSON completion instead of a stream fails without quoting the completion', async () => {
    const raw = await rawServer(
      200,
      'application/json',
      JSON.stringify({ choices: [{ message: { content: 'secret words' } }] }),
    );
    try {
      const llm = createOpenAiCompatibleLlm('ollama', {
        options: {},
        apiKey: undefined,
        serviceOptions: { base_url: raw.url },
        env: EMULATOR_ENV,
      });
      const err = await failure(collect(llm));
      expect(err.message).toMatch(/expected an event stream/);
      expect(err.message).not.toContain('secret words');
    } finally {
      await raw.close();
    }
  });

  it('a proxy error page becomes one line of text, retryable for 502', async () => {
    const raw = await rawServer(502, 'text/html', '<html>\n<body>Bad   Gateway</body>\n</html>');
    try {
      const llm = createOpenAiCompatibleLlm('ollama', {
        options: {},
        apiKey: undefined,
        serviceOptions: { base_url: raw.url },
        env: EMULATOR_ENV,
      });
      const err = await failure(collect(llm));
      expect(err.retryable).toBe(true);
      expect(err.message).toBe('ollama: HTTP 502: <html> <body>Bad Gateway</body> </html>');
    } finally {
      await raw.close();
    }
  });
});

describe('OpenAI-compatible names', () => {
  it('have the documented default endpoints', () => {
    expect(OPENAI_COMPATIBLE.openai.baseUrl).toBe('https://api.openai.com');
    expect(OPENAI_COMPATIBLE.groq.baseUrl).toBe('https://api.groq.com/openai');
    expect(OPENAI_COMPATIBLE.together.baseUrl).toBe('https://api.together.xyz');
    expect(OPENAI_COMPATIBLE.grok.baseUrl).toBe('https://api.x.ai');
    expect(OPENAI_COMPATIBLE.ollama.baseUrl).toBe('http://127.0.0.1:11434');
    expect(OPENAI_COMPATIBLE.custom_llm.baseUrl).toBeUndefined();
  });

  it.each([
    ['openai', 'gpt-4o-mini', 'max_completion_tokens'],
    ['groq', 'llama-3.3-70b-versatile', 'max_tokens'],
    ['together', 'meta-llama/Llama-3.3-70B-Instruct-Turbo', 'max_tokens'],
    ['grok', 'grok-3-mini', 'max_tokens'],
    ['ollama', 'llama3.2', 'max_tokens'],
  ] as const)('%s sends its default model to SWITCHBOARD_<NAME>_URL', async (name, model, maxTokensField) => {
    const env = { [`SWITCHBOARD_${name.toUpperCase()}_URL`]: server.url };
    const llm = createOpenAiCompatibleLlm(name, { options: { max_tokens: 50 }, apiKey: KEY, serviceOptions: {}, env });
    expect(llm.name).toBe(name);
    expect(text(await collect(llm))).toBe('You said: What time do you open?');
    const body = emulator.requests[0]!.body as Record<string, unknown>;
    expect(body.model).toBe(model);
    expect(body[maxTokensField]).toBe(50);
    expect(emulator.requests[0]!.path).toBe('/v1/chat/completions');
  });

  it('every name is covered', () => {
    expect(OPENAI_COMPATIBLE_NAMES.sort()).toEqual(['custom_llm', 'grok', 'groq', 'ollama', 'openai', 'together']);
  });

  it('grok falls back to XAI_API_KEY', async () => {
    const env = { SWITCHBOARD_GROK_URL: server.url, XAI_API_KEY: KEY };
    await collect(createOpenAiCompatibleLlm('grok', { options: {}, apiKey: undefined, serviceOptions: {}, env }));
    expect(emulator.requests[0]!.status).toBe(200);
    expect(() =>
      createOpenAiCompatibleLlm('grok', { options: {}, apiKey: undefined, serviceOptions: {}, env: EMULATOR_ENV }),
    ).toThrow(/GROK_API_KEY/);
  });

  it('ollama without a key sends no Authorization header', async () => {
    await start({ requireKey: false, apiKey: undefined });
    const llm = createOpenAiCompatibleLlm('ollama', {
      options: {},
      apiKey: undefined,
      serviceOptions: { base_url: server.url },
      env: EMULATOR_ENV,
    });
    expect(text(await collect(llm))).toBe('You said: What time do you open?');
    expect(emulator.requests[0]!.headers.authorization).toBeUndefined();
  });

  it('custom_llm takes its base_url and model from the bot', async () => {
    await start({ requireKey: false, apiKey: undefined, pathPrefix: '/vllm' });
    const llm = createOpenAiCompatibleLlm('custom_llm', {
      options: { model: 'my-model' },
      apiKey: undefined,
      serviceOptions: { base_url: `${server.url}/vllm/v1` },
      env: EMULATOR_ENV,
    });
    await collect(llm);
    expect(emulator.requests[0]!.path).toBe('/vllm/v1/chat/completions');
    expect((emulator.requests[0]!.body as { model: string }).model).toBe('my-model');
  });

  it('custom_llm without a base_url fails clearly', () => {
    expect(() =>
      createOpenAiCompatibleLlm('custom_llm', {
        options: { model: 'm' },
        apiKey: undefined,
        serviceOptions: {},
        env: EMULATOR_ENV,
      }),
    ).toThrow(/custom_llm: no endpoint: set service_options\.custom_llm\.base_url .* SWITCHBOARD_CUSTOM_LLM_URL/);
    expect(() =>
      createOpenAiCompatibleLlm('custom_llm', {
        options: {},
        apiKey: undefined,
        serviceOptions: { base_url: 'http://x' },
        env: EMULATOR_ENV,
      }),
    ).toThrow(/no model/);
  });

  it('rejects options of the wrong type clearly', () => {
    expect(() => createOpenAiCompatibleLlm('openai', settings({ options: { temperature: 'hot' } }))).toThrow(
      /invalid llm options: temperature/,
    );
  });
});

describe('OpenAI emulator', () => {
  async function post(
    body: unknown,
    headers: Record<string, string> = { authorization: `Bearer ${KEY}` },
  ): Promise<Response> {
    return fetch(`${server.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    });
  }

  it('refuses a bad body with 400 in the OpenAI error shape', async () => {
    const res = await post({ model: 'gpt-4o-mini', messages: [{ role: 'robot', content: 'hi' }] });
    expect(res.status).toBe(400);
    const body = (await res.json()) as { error: { message: string; type: string; param: string } };
    expect(body.error.type).toBe('invalid_request_error');
    expect(body.error.param).toBe('messages.0.role');
    expect((await post('{not json')).status).toBe(400);
  });

  it('requires a bearer key unless built without', async () => {
    const res = await post({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }, {});
    expect(res.status).toBe(401);
    expect(((await res.json()) as { error: { message: string } }).error.message).toMatch(/didn't provide an API key/);
  });

  it('streams data-only lines ending in [DONE], with the usage chunk when asked', async () => {
    await start({ replies: ['Hi there.'] });
    const res = await post({
      model: 'gpt-4o-mini',
      stream: true,
      stream_options: { include_usage: true },
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const raw = await res.text();
    expect(raw).not.toMatch(/^event:/m);
    const lines = raw.split('\n\n').filter(Boolean);
    expect(lines.at(-1)).toBe('data: [DONE]');
    const chunks = lines.slice(0, -1).map((line) => JSON.parse(line.replace(/^data: /, '')) as Record<string, unknown>);
    expect(chunks[0]).toMatchObject({
      object: 'chat.completion.chunk',
      model: 'gpt-4o-mini',
      choices: [{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }],
    });
    expect(chunks.at(-2)).toMatchObject({ choices: [{ delta: {}, finish_reason: 'stop' }] });
    expect(chunks.at(-1)).toMatchObject({ choices: [], usage: { completion_tokens: 2 } });
  });

  it('answers a non-streaming request with one chat.completion', async () => {
    const res = await post({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] });
    const body = (await res.json()) as { object: string; choices: Array<{ message: { content: string } }> };
    expect(body.object).toBe('chat.completion');
    expect(body.choices[0]!.message.content).toBe('You said: hi');
  });

  it('close() ends held requests without counting them as client aborts', async () => {
    emulator.faults.next({ kind: 'hang' });
    const pending = post({ model: 'm', stream: true, messages: [{ role: 'user', content: 'hi' }] }).then(
      (res) => res.text(),
      (err: unknown) => err,
    );
    await vi.waitFor(() => expect(emulator.requests.length).toBe(1));
    await vi.waitFor(() => expect(emulator.requests[0]!.body).toBeDefined());
    emulator.close();
    expect(await pending).toBeInstanceOf(Error);
    await vi.waitFor(() => expect(emulator.stats.active).toBe(0));
    expect(emulator.stats.abortedByClient).toBe(0);
  });

  it('keeps a bounded request log and counts everything', async () => {
    await start({ maxRecordedRequests: 2 });
    for (const content of ['a', 'b', 'c'])
      await (await post({ model: 'm', messages: [{ role: 'user', content }] })).text();
    expect(
      emulator.requests.map((r) => (r.body as { messages: Array<{ content: string }> }).messages[0]!.content),
    ).toEqual(['b', 'c']);
    expect(emulator.stats).toMatchObject({ requests: 3, completed: 3, abortedByClient: 0, active: 0 });
  });

  it('leaves other paths to other emulators', async () => {
    const res = await fetch(`${server.url}/v1/messages`, { method: 'POST', body: '{}' });
    expect(res.status).toBe(404);
  });
});
