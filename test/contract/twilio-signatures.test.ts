import { type IncomingHttpHeaders, type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import twilio from 'twilio';
import { afterEach, describe, expect, it } from 'vitest';
import WebSocket, { WebSocketServer } from 'ws';
import { CarrierMessages } from '../../src/tools/simulator/carrier-messages.js';
import { PhoneCall } from '../../src/tools/simulator/phone-call.js';
import { buildStreamTwiml } from '../../src/telephony/twiml.js';
import { type CallServer, startCallServer } from '../helpers/call-server.js';
import { auth } from '../helpers/test-data.js';
import { API_KEY, type Vendors, startVendors } from './vendors.js';

/**
 * X-Twilio-Signature cross-checked with Twilio's own library, in both directions and over real
 * sockets: what the phone simulator signs (webhook POSTs and media websocket upgrades) validates
 * with `twilio.validateRequest`, and what `twilio.getExpectedTwilioSignature` signs is accepted
 * by the server, while a tampered request is refused.
 */

const TOKEN = 'twilio-auth-token-for-contract-tests';
const PUBLIC_URL = 'https://bots.example.com';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function single(value: string | string[] | undefined): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

describe('the phone simulator signs as Twilio does (checked with twilio.validateRequest)', () => {
  it('signs the voice webhook POST and the media websocket upgrade', async () => {
    let webhook: { url: string; params: Record<string, string>; signature: string | undefined } | undefined;
    let upgrade: { url: string; headers: IncomingHttpHeaders } | undefined;
    const server: Server = createServer((req, res) => {
      let body = '';
      req.on('data', (chunk: Buffer) => (body += chunk.toString()));
      req.on('end', () => {
        // The URL the carrier requested, with the host name it used.
        webhook = {
          url: `http://${req.headers.host}${req.url}`,
          params: Object.fromEntries(new URLSearchParams(body)),
          signature: single(req.headers['x-twilio-signature']),
        };
        const streamUrl = `ws://${req.headers.host}/ws/twilio/cfg_1`;
        res
          .writeHead(200, { 'content-type': 'text/xml' })
          .end(buildStreamTwiml({ streamUrl, parameters: { botConfigId: 'cfg_1' } }));
      });
    });
    const wss = new WebSocketServer({ server });
    wss.on('connection', (_socket, req) => {
      upgrade = { url: `ws://${req.headers.host}${req.url}`, headers: req.headers };
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    cleanups.push(async () => {
      for (const client of wss.clients) client.terminate();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    });
    const port = (server.address() as AddressInfo).port;

    const call = new PhoneCall({
      target: { webhookUrl: `http://localhost:${port}/twilio/voice/cfg_1?attempt=1` },
      scenario: { steps: [{ do: 'wait', ms: 50 }] },
      from: '+15550100001',
      to: '+15550100002',
      authToken: TOKEN,
    });
    await call.run();

    expect(webhook).toBeDefined();
    expect(webhook!.params).toMatchObject({ CallSid: call.callSid, From: '+15550100001', To: '+15550100002' });
    expect(twilio.validateRequest(TOKEN, webhook!.signature!, webhook!.url, webhook!.params)).toBe(true);
    expect(
      twilio.validateRequest(TOKEN, webhook!.signature!, webhook!.url, { ...webhook!.params, To: '+15550100999' }),
    ).toBe(false);
    expect(twilio.validateRequest('another-token', webhook!.signature!, webhook!.url, webhook!.params)).toBe(false);

    expect(upgrade).toBeDefined();
    const upgradeSignature = single(upgrade!.headers['x-twilio-signature']);
    expect(twilio.validateRequest(TOKEN, upgradeSignature!, upgrade!.url, {})).toBe(true);
    expect(twilio.validateRequest(TOKEN, upgradeSignature!, upgrade!.url.replace('cfg_1', 'cfg_2'), {})).toBe(false);
  });
});

describe('the server accepts what twilio.getExpectedTwilioSignature signs', () => {
  let server: CallServer;
  let vendors: Vendors;
  /** The server's own address, by host name; the carrier signs the public URL instead. */
  let localUrl: string;

  async function start(): Promise<{ id: string; domain: string }> {
    vendors = await startVendors({ replies: ['Hello, how can I help?'] });
    cleanups.push(() => vendors.close());
    server = await startCallServer(() => {}, {
      TWILIO_AUTH_TOKEN: TOKEN,
      SWITCHBOARD_PUBLIC_URL: PUBLIC_URL,
      SWITCHBOARD_DEEPGRAM_URL: vendors.baseUrl,
      SWITCHBOARD_OPENAI_URL: vendors.baseUrl,
      SWITCHBOARD_CARTESIA_URL: vendors.baseUrl,
    });
    cleanups.push(() => server.close());
    localUrl = server.baseUrl.replace('127.0.0.1', 'localhost');
    const { id } = await server.createConfig({ api_keys: { openai: API_KEY, deepgram: API_KEY, cartesia: API_KEY } });
    const view = await (await fetch(`${localUrl}/v1/bots/twilio-config/${id}`, { headers: auth() })).json();
    return { id, domain: (view as { domain: string }).domain };
  }

  it('the voice webhook: a POST signed by the library gets the TwiML; tampered, re-targeted or unsigned ones get 403', async () => {
    const { id } = await start();
    const path = `/twilio/voice/${id}`;
    const params = {
      AccountSid: 'AC0123456789abcdef0123456789abcdef',
      CallSid: 'CA0123456789abcdef0123456789abcdef',
      From: '+15550100001',
      To: '+15550100002',
      CallStatus: 'ringing',
      Direction: 'inbound',
    };
    const signature = twilio.getExpectedTwilioSignature(TOKEN, PUBLIC_URL + path, params);
    const post = (form: Record<string, string>, headers: Record<string, string>) =>
      fetch(localUrl + path, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
        body: new URLSearchParams(form).toString(),
      });

    const ok = await post(params, { 'x-twilio-signature': signature });
    expect(ok.status).toBe(200);
    const twiml = await ok.text();
    expect(twiml).toContain(`<Stream url="wss://bots.example.com/ws/twilio/${id}">`);
    expect(twiml).toContain('<Parameter name="from" value="+15550100001"/>');

    expect((await post({ ...params, From: '+15550100666' }, { 'x-twilio-signature': signature })).status).toBe(403);
    const signedForLocal = twilio.getExpectedTwilioSignature(TOKEN, localUrl + path, params);
    expect((await post(params, { 'x-twilio-signature': signedForLocal })).status).toBe(403);
    expect((await post(params, {})).status).toBe(403);
  });

  it('the media websocket: an upgrade signed by the library gets the bot greeting; one signed for another URL is closed with 1008', async () => {
    const { id, domain } = await start();
    const streamPath = `/ws/twilio/${id}`;
    const dial = (signature: string) =>
      new WebSocket(localUrl.replace(/^http/, 'ws') + streamPath, { headers: { 'x-twilio-signature': signature } });
    const messages = new CarrierMessages({
      accountSid: 'AC0123456789abcdef0123456789abcdef',
      callSid: 'CA0123456789abcdef0123456789abcdef',
      streamSid: 'MZ0123456789abcdef0123456789abcdef',
    });

    const good = dial(twilio.getExpectedTwilioSignature(TOKEN, `wss://bots.example.com${streamPath}`, {}));
    const firstMedia = new Promise<Record<string, unknown>>((resolve, reject) => {
      good.on('message', (data) => {
        const json = JSON.parse(String(data)) as Record<string, unknown>;
        if (json.event === 'media') resolve(json);
      });
      good.on('close', (code, reason) => reject(new Error(`closed ${code} ${reason.toString()}`)));
      good.on('error', reject);
    });
    good.on('open', () => {
      good.send(messages.connected());
      good.send(messages.start({ botConfigId: id, domain }));
    });
    const media = await firstMedia;
    expect(media.streamSid).toBe('MZ0123456789abcdef0123456789abcdef');
    good.close();

    const forged = dial(twilio.getExpectedTwilioSignature(TOKEN, `wss://bots.example.com/ws/twilio/another-id`, {}));
    const [code, reason] = await new Promise<[number, string]>((resolve) =>
      forged.on('close', (c, r) => resolve([c, r.toString()])),
    );
    expect(code).toBe(1008);
    expect(reason).toBe('invalid X-Twilio-Signature');
  });
});
