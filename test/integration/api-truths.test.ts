import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { ERROR_TYPES } from '../../src/shared/api-error.js';
import { ScriptedLlm, ScriptedStt, ToneTts } from '../fakes/scripted-providers.js';
import { type CallServer, startCallServer } from '../helpers/call-server.js';
import { TEST_KEY, sampleConfig } from '../helpers/test-data.js';

/** What the README promises about errors, close codes and profiles, checked against a running server. */

const README = readFileSync(fileURLToPath(new URL('../../README.md', import.meta.url)), 'utf8');

/** The README's `| code | status | …` rows of the table under the heading `### Errors`. */
function readmeErrorRows(): Map<string, number> {
  const section = README.split('### Errors')[1]!.split('\n## ')[0]!;
  const rows = new Map<string, number>();
  for (const match of section.matchAll(/^\| `([a-z-]+)` \| (\d{3}) \|/gm)) rows.set(match[1]!, Number(match[2]));
  return rows;
}

/** The codes of the media websocket's close-code table (the one after "The media websocket closes"). */
function readmeMediaCloseCodes(): number[] {
  const section = README.split('The media websocket closes with a code')[1]!.split('\n## ')[0]!;
  return [...section.matchAll(/^\| (\d{4}) \|/gm)].map((m) => Number(m[1]));
}

let server: CallServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function start(env: Record<string, string> = {}): Promise<CallServer> {
  server = await startCallServer((registry) => {
    registry
      .registerStt('scripted_stt', () => new ScriptedStt([]))
      .registerLlm('scripted_llm', () => new ScriptedLlm({ replies: ['Hello.'] }))
      .registerTts('tone_tts', () => new ToneTts());
  }, env);
  return server;
}

async function postJson(
  path: string,
  body: RequestInit['body'],
  extra: RequestInit = {},
): Promise<{ status: number; json: { error?: string; info?: string; botConfig?: { bot_profile: string } } }> {
  const res = await fetch(`${server!.baseUrl}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${TEST_KEY}`, 'content-type': 'application/json' },
    body,
    ...extra,
  });
  return { status: res.status, json: (await res.json()) as { error?: string; info?: string } };
}

describe('documented truths', () => {
  it('a tampered recording link is a 403 forbidden-error, and the README error table says so', async () => {
    await start();
    const res = await fetch(
      `${server!.baseUrl}/recording-downloads/00000000-0000-4000-8000-000000000000/mixed.wav?expires=9999999999&signature=forged`,
    );
    expect(res.status).toBe(403);
    expect(((await res.json()) as { error: string }).error).toBe('forbidden-error');
    const rows = readmeErrorRows();
    expect(rows.get('forbidden-error')).toBe(403);
    // Every documented row has the status the code answers with.
    for (const [type, status] of rows) expect(ERROR_TYPES[type as keyof typeof ERROR_TYPES], type).toBe(status);
  });

  it("an over-long or malformed id is a 400 invalid-request-error in the usual envelope, not the router's own body", async () => {
    await start();
    const get = async (path: string) => {
      const res = await fetch(`${server!.baseUrl}${path}`, { headers: { authorization: `Bearer ${TEST_KEY}` } });
      return { status: res.status, json: (await res.json()) as { error?: string; info?: string } };
    };
    // Longer than the schema allows (128) but within the router's limit: the schema names the field.
    const schemaLong = await get(`/v1/bots/twilio-config/${'a'.repeat(200)}`);
    expect(schemaLong.status).toBe(400);
    expect(schemaLong.json.error).toBe('invalid-request-error');
    expect(schemaLong.json.info).toMatch(/id/);
    // Longer than the router passes on (once a raw 414 with Fastify's own error body).
    const routerLong = await get(`/v1/bots/twilio-config/${'a'.repeat(1000)}`);
    expect(routerLong).toEqual({
      status: 400,
      json: { error: 'invalid-request-error', info: 'a path parameter is longer than the server accepts' },
    });
    const malformed = await get('/v1/bots/twilio-config/%E0%A4%A');
    expect(malformed).toEqual({
      status: 400,
      json: { error: 'invalid-request-error', info: 'the request URL is malformed' },
    });
    expect((await fetch(`${server!.baseUrl}/healthz`)).status).toBe(200);
  });

  it('a media message over 64 KiB closes the stream with 1009, which the README documents, and the server carries on', async () => {
    await start();
    const { wssUrl } = await server!.createConfig({
      services: { stt: 'scripted_stt', llm: 'scripted_llm', tts: 'tone_tts' },
    });
    const ws = new WebSocket(wssUrl);
    await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
    const closed = new Promise<number>((resolve) => ws.once('close', (code) => resolve(code)));
    ws.send(JSON.stringify({ event: 'connected', protocol: 'Call', version: '1.0.0' }));
    ws.send(JSON.stringify({ event: 'media', media: { payload: 'A'.repeat(70 * 1024) } }));
    expect(await closed).toBe(1009);
    expect(readmeMediaCloseCodes()).toContain(1009);
    expect((await fetch(`${server!.baseUrl}/healthz`)).status).toBe(200);
  });

  it('a body over the limit is a 413 whose info states the limit, with or without Content-Length', async () => {
    await start({ SWITCHBOARD_BODY_LIMIT_BYTES: '2048' });
    const big = JSON.stringify(sampleConfig({ rtvi_client_version: 'x'.repeat(4096) }));
    const sized = await postJson('/v1/bots/twilio-config', big);
    expect(sized.status).toBe(413);
    expect(sized.json).toEqual({ error: 'payload-too-large', info: 'the request body exceeds 2048 bytes' });

    const chunks = [big.slice(0, 1000), big.slice(1000)];
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        const next = chunks.shift();
        if (next === undefined) controller.close();
        else controller.enqueue(new TextEncoder().encode(next));
      },
    });
    const chunked = await postJson('/v1/bots/twilio-config', stream, { duplex: 'half' } as RequestInit);
    expect(chunked.status).toBe(413);
    expect(chunked.json.info).toBe('the request body exceeds 2048 bytes');
  });

  it('lists only the documented bot profiles when one is wrong, and still takes the documented alias', async () => {
    await start();
    const wrong = await postJson(
      '/v1/bots/twilio-config',
      JSON.stringify(sampleConfig({ bot_profile: 'voice_2099_01' })),
    );
    expect(wrong.status).toBe(400);
    const info = wrong.json.info!;
    const listed = /bot_profile: must be one of: ([^;]*)/.exec(info)?.[1];
    expect(listed, info).toBeDefined();
    const namesIn = (text: string) => new Set(text.match(/[a-z]+(?:_[a-z0-9]+)+/g));
    // The README's paragraph on bot_profile names exactly the same profiles and alias.
    const documented = /`bot_profile` is one of ([\s\S]*?)\n\s*Pipeline profiles/.exec(README)?.[1];
    expect(documented).toBeDefined();
    expect(namesIn(listed!)).toEqual(namesIn(documented!));
    expect(listed).toContain('telephony_ws_voice_2024_09 (alias twilio_ws_voice_2024_09)');
    expect(info).not.toMatch(/vendorA|vendorB/);

    const alias = await postJson(
      '/v1/bots/twilio-config',
      JSON.stringify(sampleConfig({ bot_profile: 'twilio_ws_voice_2024_09' })),
    );
    expect(alias.status).toBe(200);
    expect(alias.json.botConfig?.bot_profile).toBe('telephony_ws_voice_2024_09');
  });
});
