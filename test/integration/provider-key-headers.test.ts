import { once } from 'node:events';
import { type IncomingMessage, createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { WebSocket, WebSocketServer } from 'ws';
import { type TestApp, createTestApp } from '../helpers/test-app.js';
import { auth, removeDir, sampleConfig } from '../helpers/test-data.js';

/**
 * Provider keys travel in HTTP headers (Authorization, x-api-key, websocket upgrades). A key Node
 * cannot put in a header used to be stored with 200 and then broke every call at set-up; the
 * API must refuse exactly those keys when the configuration is written.
 */

let t: TestApp;
let baseUrl: string;
beforeEach(async () => {
  t = await createTestApp();
  baseUrl = await t.app.listen({ port: 0, host: '127.0.0.1' });
});
afterEach(async () => {
  await t.close();
  removeDir(t.dataDir);
});

async function post(
  path: string,
  body: unknown,
): Promise<{ status: number; body: { error?: string; info?: string; id?: string } }> {
  const res = await fetch(`${baseUrl}${path}`, {
    method: 'POST',
    headers: { ...auth(), 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as { error?: string; info?: string } };
}

/** Whether Node sends `Authorization: Bearer <key>` over HTTP and in a websocket upgrade, tried for real. */
async function nodeCanSend(key: string): Promise<{ http: boolean; ws: boolean }> {
  const received: string[] = [];
  const server = createServer((req: IncomingMessage, res) => {
    received.push(req.headers.authorization ?? '');
    res.end('ok');
  });
  const wss = new WebSocketServer({ server });
  wss.on('connection', (socket) => socket.close(1000));
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  try {
    let http = false;
    try {
      const req = request({ host: '127.0.0.1', port, path: '/', headers: { authorization: `Bearer ${key}` } });
      req.end();
      const [res] = (await Promise.race([
        once(req, 'response'),
        once(req, 'error').then(([err]) => Promise.reject(err)),
      ])) as [IncomingMessage];
      res.resume();
      await once(res, 'end');
      http = received.length === 1;
    } catch {
      http = false;
    }
    let ws = false;
    try {
      const socket = new WebSocket(`ws://127.0.0.1:${port}/`, { headers: { authorization: `Bearer ${key}` } });
      const [code] = (await Promise.race([
        once(socket, 'close'),
        once(socket, 'error').then(([err]) => Promise.reject(err)),
      ])) as [number];
      ws = code === 1000;
    } catch {
      ws = false;
    }
    return { http, ws };
  } finally {
    wss.close();
    server.closeAllConnections();
    server.close();
  }
}

const PLACEHOLDER_KEYS = { openai: 'sk-…', deepgram: '…', cartesia: '…' };

describe('provider keys must be sendable in an HTTP header', () => {
  it('refuses the README placeholders with a 400 naming each field, on create, replace and start', async () => {
    const created = await post('/v1/bots/twilio-config', sampleConfig({ api_keys: PLACEHOLDER_KEYS }));
    expect(created.status).toBe(400);
    expect(created.body.error).toBe('invalid-request-error');
    for (const field of ['api_keys.openai: ', 'api_keys.deepgram: ', 'api_keys.cartesia: '])
      expect(created.body.info).toContain(field);
    expect(created.body.info).toContain('HTTP header');

    const good = await post('/v1/bots/twilio-config', sampleConfig());
    expect(good.status).toBe(200);
    const replaced = await post(
      `/v1/bots/twilio-config/${good.body.id}`,
      sampleConfig({ api_keys: { ...PLACEHOLDER_KEYS, openai: 'sk-test' } }),
    );
    expect(replaced.status).toBe(400);
    expect(replaced.body.info).toContain('api_keys.deepgram: ');
    expect(replaced.body.info).not.toContain('api_keys.openai');

    const started = await post(
      '/v1/bots/start',
      sampleConfig({
        bot_profile: 'voice_2024_10',
        api_keys: { ...(sampleConfig().api_keys as object), openai: 'sk-…' },
      }),
    );
    expect(started.status).toBe(400);
    expect(started.body.error).toBe('invalid-request-error');
    expect(started.body.info).toContain('api_keys.openai: ');

    // ASCII placeholders such as the README's are stored.
    const ascii = await post(
      '/v1/bots/twilio-config',
      sampleConfig({ api_keys: { openai: 'sk-test', deepgram: 'dg-test', cartesia: 'car-test' } }),
    );
    expect(ascii.status).toBe(200);
  });

  it('accepts exactly the keys Node can send in a header and in a websocket upgrade', async () => {
    const candidates = [
      'sk-test',
      'sk-…',
      'key with spaces',
      'tab\tinside',
      'caf\u00e9-latin1',
      'line\nbreak',
      'carriage\rreturn',
      'nul\u0000byte',
      'del\u007fchar',
      'bell\u0007char',
      'emoji-\u{1f511}',
      '\u00a0nbsp',
    ];
    let accepted = 0;
    for (const key of candidates) {
      const sendable = await nodeCanSend(key);
      // HTTP requests and websocket upgrades follow the same rule.
      expect(sendable.ws, JSON.stringify(key)).toBe(sendable.http);
      const res = await post(
        '/v1/bots/twilio-config',
        sampleConfig({ api_keys: { ...(sampleConfig().api_keys as object), openai: key } }),
      );
      expect(res.status, `${JSON.stringify(key)}: ${res.body.info}`).toBe(sendable.http ? 200 : 400);
      if (!sendable.http) expect(res.body.info).toContain('api_keys.openai: ');
      if (sendable.http) accepted += 1;
    }
    // Both verdicts occur, so the comparison means something.
    expect(accepted).toBeGreaterThan(2);
    expect(accepted).toBeLessThan(candidates.length - 3);
  });
});
