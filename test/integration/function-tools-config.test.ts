import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type TestApp, createTestApp } from '../helpers/test-app.js';
import { auth, removeDir, sampleConfig } from '../helpers/test-data.js';

/**
 * Save-time checks of function calling, over a real socket: `webhook_tools` against the llm
 * option `tools`, built-in names, the per-tool fields, URLs, and the signing secret a
 * configuration gets and its owner reads.
 */

let t: TestApp;
let base: string;
beforeAll(async () => {
  t = await createTestApp({ SWITCHBOARD_PUBLIC_URL: 'https://bots.example.com' });
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  base = `http://localhost:${(t.app.server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await t.close();
  removeDir(t.dataDir);
});

const bookTable = {
  type: 'function',
  function: {
    name: 'book_table',
    description: 'Books a table',
    parameters: { type: 'object', properties: { people: { type: 'integer' } } },
  },
};

/** The sample configuration with these llm `tools` and `webhook_tools`. */
function withTools(
  tools: unknown[],
  webhookTools: Record<string, unknown> | undefined,
  extra: Record<string, unknown> = {},
) {
  const body = sampleConfig(extra);
  const config = body.config as Array<{ service: string; options: Array<{ name: string; value: unknown }> }>;
  config.find((entry) => entry.service === 'llm')!.options.push({ name: 'tools', value: tools });
  if (webhookTools) body.webhook_tools = webhookTools;
  return body;
}

async function post(path: string, body: unknown) {
  const res = await fetch(`${base}${path}`, {
    method: 'POST',
    headers: { ...auth(), 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as Record<string, any> };
}

const LLM_TOOLS_PATH = 'config.1.options.3.value';

describe('function tools, checked when a configuration is saved', () => {
  it('a webhook tool with its schema is saved with the new fields, and a signing secret its owner reads', async () => {
    const hook = {
      url: 'https://hooks.example.com/book',
      method: 'POST',
      custom_headers: { Authorization: 'Bearer abc' },
      streaming: false,
      say: 'Let me book that.',
      timeout_secs: 8,
      cancel_on_interruption: true,
    };
    const created = await post('/v1/bots/twilio-config', withTools([bookTable, 'end_call'], { book_table: hook }));
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    expect(created.body.botConfig.webhook_tools).toEqual({ book_table: hook });
    const secret = created.body.botConfig.webhook_secret as string;
    expect(secret).toMatch(/^whsec_[A-Za-z0-9_-]{43}$/);
    const read = await fetch(`${base}/v1/bots/twilio-config/${created.body.id}`, { headers: auth() });
    expect(((await read.json()) as any).botConfig.webhook_secret).toBe(secret);
    // Sealed at rest, like provider keys.
    const row = await t.database.db
      .selectFrom('bot_configs')
      .select('body_json')
      .where('id', '=', created.body.id)
      .executeTakeFirstOrThrow();
    expect(row.body_json).not.toContain(secret);
    // A replace that leaves the secret out keeps it; one that sends its own sets it.
    const replaced = await post(
      `/v1/bots/twilio-config/${created.body.id}`,
      withTools([bookTable], { book_table: hook }),
    );
    expect(replaced.body.botConfig.webhook_secret).toBe(secret);
    const own = 'my-own-signing-secret-0123';
    const set = await post(
      `/v1/bots/twilio-config/${created.body.id}`,
      withTools([bookTable], { book_table: hook }, { webhook_secret: own }),
    );
    expect(set.body.botConfig.webhook_secret).toBe(own);
  });

  it('a configuration without webhook tools gets no secret', async () => {
    const created = await post(
      '/v1/bots/twilio-config',
      withTools(['end_call', 'transfer_call', 'send_dtmf'], undefined),
    );
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    expect(created.body.botConfig.webhook_secret).toBeUndefined();
  });

  it.each([
    [
      'a webhook tool without a schema in tools',
      withTools([], { book_table: { url: 'https://h.example.com/b' } }),
      'webhook_tools.book_table: function "book_table" has no schema in the llm option "tools"',
    ],
    [
      'a schema nothing answers on the phone',
      withTools([bookTable], undefined),
      `${LLM_TOOLS_PATH}.0: function "book_table" has nothing to answer it`,
    ],
    [
      'an unknown built-in',
      withTools(['hang_up'], undefined),
      `${LLM_TOOLS_PATH}.0: unknown built-in function "hang_up"; built-ins: end_call, transfer_call, send_dtmf`,
    ],
    [
      'a function listed twice',
      withTools([bookTable, bookTable], { book_table: { url: 'https://h.example.com/b' } }),
      `${LLM_TOOLS_PATH}.1: function "book_table" is listed twice`,
    ],
    [
      'a URL that is not one',
      withTools([bookTable], { book_table: { url: 'not a url' } }),
      'webhook_tools.book_table.url',
    ],
    [
      'a URL of another scheme',
      withTools([bookTable], { book_table: { url: 'ftp://h.example.com/b' } }),
      'webhook_tools.book_table.url: must be an http:// or https:// URL',
    ],
    [
      'a URL with credentials',
      withTools([bookTable], { book_table: { url: 'https://u:p@h.example.com/b' } }),
      'webhook_tools.book_table.url: must not carry credentials',
    ],
    [
      'a metadata address',
      withTools([bookTable], { book_table: { url: 'http://169.254.169.254/latest' } }),
      'webhook_tools.book_table.url: points at 169.254.169.254, a link-local or metadata address',
    ],
    [
      'a header Switchboard sets',
      withTools([bookTable], {
        book_table: { url: 'https://h.example.com/b', custom_headers: { 'Content-Length': '5' } },
      }),
      'webhook_tools.book_table.custom_headers.Content-Length: "Content-Length" is set by Switchboard',
    ],
    [
      'the signature header',
      withTools([bookTable], {
        book_table: { url: 'https://h.example.com/b', custom_headers: { 'X-Switchboard-Signature': 'x' } },
      }),
      'custom_headers.X-Switchboard-Signature',
    ],
    [
      'a header name HTTP refuses',
      withTools([bookTable], { book_table: { url: 'https://h.example.com/b', custom_headers: { 'Bad Name': 'x' } } }),
      '"Bad Name" is not a valid HTTP header name',
    ],
    [
      'a header value with a line break',
      withTools([bookTable], { book_table: { url: 'https://h.example.com/b', custom_headers: { 'X-A': 'a\r\nb' } } }),
      'custom_headers.X-A: cannot be sent in an HTTP header',
    ],
    [
      'a timeout out of range',
      withTools([bookTable], { book_table: { url: 'https://h.example.com/b', timeout_secs: 600 } }),
      'webhook_tools.book_table.timeout_secs',
    ],
    [
      'a filler phrase that is not text',
      withTools([bookTable], { book_table: { url: 'https://h.example.com/b', say: 5 } }),
      'webhook_tools.book_table.say',
    ],
    [
      'a cancel flag that is not a boolean',
      withTools([bookTable], { book_table: { url: 'https://h.example.com/b', cancel_on_interruption: 'yes' } }),
      'webhook_tools.book_table.cancel_on_interruption',
    ],
    [
      'a short signing secret',
      withTools([bookTable], { book_table: { url: 'https://h.example.com/b' } }, { webhook_secret: 'short' }),
      'webhook_secret: must be at least 16 characters',
    ],
  ])('refuses %s, naming the field', async (_what, body, expected) => {
    const res = await post('/v1/bots/twilio-config', body);
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('invalid-request-error');
    expect(res.body.info).toContain(expected);
  });
});

describe('function tools in POST /v1/bots/start', () => {
  const start = (body: Record<string, unknown>) =>
    post('/v1/bots/start', { ...body, bot_profile: 'voice_2024_10', max_duration: 60 });

  it('a room answers functions that are neither webhooks nor built in (its client does)', async () => {
    const res = await start(withTools([bookTable, 'end_call'], undefined));
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.webhook_secret).toBeUndefined();
  });

  it('webhook tools without a secret get one in the answer; with one, the answer has none', async () => {
    const generated = await start(withTools([bookTable], { book_table: { url: 'https://h.example.com/b' } }));
    expect(generated.status, JSON.stringify(generated.body)).toBe(200);
    expect(generated.body.webhook_secret).toMatch(/^whsec_/);
    const own = await start(
      withTools(
        [bookTable],
        { book_table: { url: 'https://h.example.com/b' } },
        { webhook_secret: 'my-own-signing-secret-0123' },
      ),
    );
    expect(Object.keys(own.body).sort()).toEqual(['room_url', 'token']);
  });

  it.each([
    [
      'a webhook tool without a schema',
      withTools([], { book_table: { url: 'https://h.example.com/b' } }),
      'webhook_tools.book_table: function "book_table" has no schema',
    ],
    ['an unknown built-in', withTools(['hangup'], undefined), 'unknown built-in function "hangup"'],
    [
      'a metadata address',
      withTools([bookTable], { book_table: { url: 'http://169.254.169.254/x' } }),
      'webhook_tools.book_table.url: points at 169.254.169.254',
    ],
    [
      'webhook tools on the websocket transport without a secret',
      withTools([bookTable], { book_table: { url: 'https://h.example.com/b' } }, { transport: 'websocket' }),
      'webhook_secret: webhook_tools with "transport": "websocket" need a webhook_secret',
    ],
  ])('refuses %s, naming the field', async (_what, body, expected) => {
    const res = await start(body);
    expect(res.status).toBe(400);
    expect(res.body.info).toContain(expected);
  });
});

describe('the "*" webhook entry', () => {
  it('answers every function without an entry of its own, so those need no entry; a bad key is refused', async () => {
    const ok = await post(
      '/v1/bots/twilio-config',
      withTools([bookTable], { '*': { url: 'https://h.example.com/all' } }),
    );
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
    const bad = await post(
      '/v1/bots/twilio-config',
      withTools([bookTable], { 'book table': { url: 'https://h.example.com/b' } }),
    );
    expect(bad.status).toBe(400);
    expect(bad.body.info).toContain('webhook_tools.book table');
  });
});
