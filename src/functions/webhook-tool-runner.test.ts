import { createServer } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { json, sse, startToolReceiver } from '../../test/fakes/tool-receiver.js';
import { silentLog } from '../../test/helpers/provider-kit.js';
import type { WebhookToolSettings } from '../bots/bot-config-schema.js';
import { webhookAddressPolicy } from '../security/address-policy.js';
import type { ToolAction } from './types.js';
import { createWebhookToolRunner } from './webhook-tool-runner.js';

const SECRET = 'whsec_test_secret_0123456789';
const policy = webhookAddressPolicy(false);
const call = { id: 'call_abc', name: 'book_table', argumentsJson: '{"people":4,"time":"19:30"}' };

function run(
  tool: WebhookToolSettings,
  options: { timeoutMs?: number; signal?: AbortSignal; argumentsJson?: string } = {},
) {
  const actions: ToolAction[] = [];
  const runner = createWebhookToolRunner(tool, { policy, signingSecret: SECRET, log: silentLog });
  const result = runner.run(
    { ...call, argumentsJson: options.argumentsJson ?? call.argumentsJson },
    {
      signal: options.signal ?? new AbortController().signal,
      timeoutMs: options.timeoutMs ?? 5000,
      onAction: (action) => actions.push(action),
    },
  );
  return { result, actions };
}

describe('webhook tool runner against a receiver on localhost', () => {
  let receiver: Awaited<ReturnType<typeof startToolReceiver>>;
  beforeAll(async () => {
    receiver = await startToolReceiver(SECRET);
  });
  afterAll(() => receiver.close());

  it('POSTs {function_name, tool_call_id, arguments}, signed, with the custom headers, and returns the JSON answer', async () => {
    receiver.on('/book', (_req, res) => json(res, 200, { booked: true, table: 12 }));
    const before = receiver.received.length;
    const { result } = run({
      url: receiver.url('/book'),
      custom_headers: { Authorization: 'Bearer abc', 'X-Shop': 'one' },
    });
    expect(await result).toEqual({ outcome: 'ok', resultJson: '{"booked":true,"table":12}' });
    const request = receiver.received[before]!;
    expect(request.method).toBe('POST');
    expect(JSON.parse(request.rawBody)).toEqual({
      function_name: 'book_table',
      tool_call_id: 'call_abc',
      arguments: { people: 4, time: '19:30' },
    });
    expect(request.headers['content-type']).toBe('application/json');
    expect(request.headers.authorization).toBe('Bearer abc');
    expect(request.headers['x-shop']).toBe('one');
    expect(request.signatureValid).toBe(true);
  });

  it('a signature made with another secret does not verify', async () => {
    const other = await startToolReceiver('another_secret_0123456789');
    other.on('/x', (_req, res) => json(res, 200, {}));
    try {
      await run({ url: other.url('/x') }).result;
      expect(other.received[0]!.signatureValid).toBe(false);
    } finally {
      await other.close();
    }
  });

  it('GET sends the same fields as query parameters and signs the path with its query', async () => {
    receiver.on('/time', (_req, res) => json(res, 200, { time: '12:00' }));
    const before = receiver.received.length;
    const { result } = run({ url: `${receiver.url('/time')}?zone=utc`, method: 'GET' });
    expect((await result).resultJson).toBe('{"time":"12:00"}');
    const request = receiver.received[before]!;
    expect(request.method).toBe('GET');
    expect(request.payload).toEqual({
      function_name: 'book_table',
      tool_call_id: 'call_abc',
      arguments: { people: 4, time: '19:30' },
    });
    expect(request.target).toContain('zone=utc');
    expect(request.signatureValid).toBe(true);
  });

  it('an empty 2xx answer is a result saying the function ran', async () => {
    receiver.on('/empty', (_req, res) => res.writeHead(204).end());
    expect(await run({ url: receiver.url('/empty') }).result).toEqual({
      outcome: 'ok',
      resultJson: '{"status":"done"}',
    });
  });

  it('a non-2xx answer is an error result with the status and the body', async () => {
    receiver.on('/fail', (_req, res) => json(res, 503, { message: 'kitchen closed' }));
    const result = await run({ url: receiver.url('/fail') }).result;
    expect(result.outcome).toBe('error');
    expect(JSON.parse(result.resultJson)).toEqual({
      error: "The function's service answered with HTTP status 503.",
      status: 503,
      details: { message: 'kitchen closed' },
    });
  });

  it('an answer that is not JSON is an error result', async () => {
    receiver.on('/html', (_req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end('<h1>hi</h1>'));
    const result = await run({ url: receiver.url('/html') }).result;
    expect(result.outcome).toBe('error');
    expect(JSON.parse(result.resultJson).error).toMatch(/not JSON/);
  });

  it('an answer larger than the bound is an error result', async () => {
    receiver.on('/huge', (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ blob: 'x'.repeat(400 * 1024) }));
    });
    const result = await run({ url: receiver.url('/huge') }).result;
    expect(result.outcome).toBe('error');
    expect(JSON.parse(result.resultJson).error).toMatch(/too large/);
  });

  it('a hanging receiver becomes a timed-out result at the tool timeout', async () => {
    receiver.on('/hang', () => {});
    const result = await run({ url: receiver.url('/hang') }, { timeoutMs: 300 }).result;
    expect(result.outcome).toBe('timeout');
    expect(JSON.parse(result.resultJson).error).toMatch(/did not answer within 0.3 seconds/);
  });

  it('aborting the signal cancels the request', async () => {
    receiver.on('/slow', () => {});
    const abort = new AbortController();
    const { result } = run({ url: receiver.url('/slow') }, { signal: abort.signal });
    setTimeout(() => abort.abort(), 100);
    expect((await result).outcome).toBe('cancelled');
  });

  it('arguments that are not JSON are an error result, and nothing is sent', async () => {
    const before = receiver.received.length;
    const result = await run({ url: receiver.url('/book') }, { argumentsJson: '{"people": 4' }).result;
    expect(result.outcome).toBe('error');
    expect(receiver.received.length).toBe(before);
  });

  it('an unreachable host is an error result', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const { port } = closed.address() as import('node:net').AddressInfo;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const result = await run({ url: `http://localhost:${port}/gone` }).result;
    expect(result.outcome).toBe('error');
    expect(JSON.parse(result.resultJson).error).toMatch(/could not be reached/);
  });

  it('refuses a metadata address, and a host name whose addresses the policy forbids', async () => {
    const metadata = await run({ url: 'http://169.254.169.254/latest' }).result;
    expect(JSON.parse(metadata.resultJson).error).toMatch(/address is not allowed/);
    const strict = createWebhookToolRunner(
      { url: receiver.url('/book') },
      { policy: { allowLinkLocal: false, allowPrivate: false }, signingSecret: SECRET, log: silentLog },
    );
    const before = receiver.received.length;
    const result = await strict.run(call, {
      signal: new AbortController().signal,
      timeoutMs: 2000,
      onAction: () => {},
    });
    expect(JSON.parse(result.resultJson).error).toMatch(/address is not allowed/);
    expect(receiver.received.length).toBe(before);
  });

  describe('streaming: true', () => {
    it('carries out the actions in order, ignores unknown ones and returns the result event', async () => {
      receiver.on('/stream', (_req, res) => {
        const send = sse(res);
        send('action', { action: 'tts:say', arguments: { text: 'Let me look that up.' } });
        send('action', { action: 'tts:dance', arguments: {} });
        send('action', 'not json');
        send('action', {
          service: 'llm',
          action: 'append_to_messages',
          arguments: [{ name: 'messages', value: [{ role: 'system', content: 'The guest is a regular.' }] }],
        });
        send('action', { action: 'call:end' });
        send('result', { booked: true });
        res.end();
      });
      const { result, actions } = run({ url: receiver.url('/stream'), streaming: true });
      expect(await result).toEqual({ outcome: 'ok', resultJson: '{"booked":true}' });
      expect(actions).toEqual([
        { type: 'say', text: 'Let me look that up.' },
        { type: 'append', messages: [{ role: 'system', content: 'The guest is a regular.' }] },
        { type: 'end_call' },
      ]);
    });

    it('hands each action over as it arrives, before the result', async () => {
      let finish: (() => void) | undefined;
      receiver.on('/live', (_req, res) => {
        const send = sse(res);
        send('action', { action: 'tts:say', arguments: { text: 'One moment.' } });
        finish = () => {
          send('result', { ok: 1 });
          res.end();
        };
      });
      const { result, actions } = run({ url: receiver.url('/live'), streaming: true });
      while (actions.length === 0) await new Promise((r) => setTimeout(r, 10));
      expect(actions).toEqual([{ type: 'say', text: 'One moment.' }]);
      finish!();
      expect((await result).resultJson).toBe('{"ok":1}');
    });

    it('a stream that stalls is cut at the tool timeout, its earlier actions already done', async () => {
      receiver.on('/stall', (_req, res) => {
        sse(res)('action', { action: 'tts:say', arguments: { text: 'Checking.' } });
      });
      const { result, actions } = run({ url: receiver.url('/stall'), streaming: true }, { timeoutMs: 400 });
      expect((await result).outcome).toBe('timeout');
      expect(actions).toEqual([{ type: 'say', text: 'Checking.' }]);
    });

    it('an error event is an error result; a JSON answer is read as a plain result', async () => {
      receiver.on('/stream-error', (_req, res) => {
        sse(res)('error', { message: 'no tables left' });
        res.end();
      });
      const failed = await run({ url: receiver.url('/stream-error'), streaming: true }).result;
      expect(failed).toEqual({ outcome: 'error', resultJson: '{"error":{"message":"no tables left"}}' });
      receiver.on('/plain', (_req, res) => json(res, 200, { plain: true }));
      expect((await run({ url: receiver.url('/plain'), streaming: true }).result).resultJson).toBe('{"plain":true}');
    });
  });
});
