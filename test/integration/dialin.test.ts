import { type TestContext, describe, it } from 'vitest';
import { type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { rmsLevel } from '../../src/audio/energy.js';
import { decodeMulaw } from '../../src/audio/mulaw.js';
import { encodePcm16Wav } from '../../src/audio/wav.js';
import { PhoneCall, runPhoneCall } from '../../src/tools/simulator/phone-call.js';
import { startWebhookReceiver } from '../fakes/webhook-receiver.js';
import { ScriptedLlm, ScriptedStt, ToneTts } from '../fakes/scripted-providers.js';
import { type CallServer, startCallServer } from '../helpers/call-server.js';
import { TEST_KEY } from '../helpers/test-data.js';
import { waitFor } from '../helpers/wait.js';

const SECRET = Buffer.alloc(32, 9).toString('base64');
const NUMBER = '+14155550177';

/** A call server for one test, closed when the test finishes. */
async function serve(
  onTestFinished: TestContext['onTestFinished'],
  ...args: Parameters<typeof startCallServer>
): Promise<CallServer> {
  const server = await startCallServer(...args);
  onTestFinished(() => server.close());
  return server;
}

async function api(
  server: CallServer,
  method: string,
  path: string,
  payload?: unknown,
): Promise<{ status: number; body: any }> {
  const res = await server.app.inject({
    method: method as 'POST',
    url: path,
    headers: { authorization: `Bearer ${TEST_KEY}` },
    ...(payload ? { payload } : {}),
  });
  return { status: res.statusCode, body: res.json() };
}

// Each test has its own server and callers and checks no timing but lower bounds (a hold lasts at
// least its timeout): they run at once, which the two 5 s holds (the shortest allowed) need.
describe.concurrent('pinless dial-in calls', () => {
  it('holds the caller with a chime, tells the customer’s server (signed), and without a bot says so and hangs up', async ({
    expect,
    onTestFinished,
  }) => {
    const server = await serve(
      onTestFinished,
      () => undefined,
      { SWITCHBOARD_DIALIN_HOLD_TIMEOUT_SECS: '5' },
      { captureLogs: true },
    );
    const receiver = await startWebhookReceiver((to) => (to === NUMBER ? SECRET : undefined));
    onTestFinished(receiver.close);
    expect((await api(server, 'POST', '/v1/buy-phone-number', { number: NUMBER })).status).toBe(200);
    const configured = await api(server, 'POST', '/v1/', {
      properties: {
        pinless_dialin: [
          {
            phone_number: NUMBER,
            room_creation_api: receiver.url,
            hmac: SECRET,
            timeout_config: { message: 'Goodbye.' },
          },
        ],
      },
    });
    expect(configured.status).toBe(200);

    const report = await runPhoneCall({
      target: { webhookUrl: `${server.baseUrl}/twilio/voice` },
      from: '+15005550006',
      to: NUMBER,
      scenario: { steps: [], endOfScript: 'stay', maxDurationMs: 20_000 },
    });

    // The verification POST, then the call's webhook with its identifiers, both signed.
    const call = receiver.received.find((r) => r.body.callId !== undefined)!;
    expect(call.body).toEqual({
      From: '+15005550006',
      To: NUMBER,
      callId: expect.any(String),
      callDomain: expect.any(String),
    });
    expect(call.signatureValid).toBe(true);
    expect(report.customParameters).toMatchObject({ callId: call.body.callId, to: NUMBER });

    // Hold chime from the start, the message at the timeout, then the server hangs up.
    expect(report.outcome).toBe('server-closed');
    expect(report.close?.code).toBe(1000);
    // The hold ran out, and it lasted its 5 s from the carrier's webhook, where the server starts
    // it (the media stream connects later, how much later depends on the machine): the caller's
    // call from its webhook request to the hang-up holds the server's whole timer.
    await server.waitForLog((r) => r.msg === 'no bot took the dial-in call in time');
    const answered = report.timeline.find((e) => e.kind === 'webhook-answered')!;
    expect(report.durationMs + report.setup.webhookMs! - answered.atMs).toBeGreaterThanOrEqual(5000);
    // The chime plays from the start of the audio, the message after it: the caller heard the
    // chime's notes and then the message, each apart from the next by the chime's pauses.
    expect(report.metrics.firstBotAudioMs).not.toBeNull();
    expect(report.metrics.bot.segments).toBeGreaterThanOrEqual(2);
  });

  it('a bot started before the carrier connects the call’s audio takes the call when the audio arrives, and the caller hears its greeting', async ({
    expect,
    onTestFinished,
  }) => {
    const greeting = 'Hello, this is the front desk.';
    const llm = new ScriptedLlm({ replies: [greeting] });
    const tts = new ToneTts();
    const server = await serve(
      onTestFinished,
      (registry) =>
        registry
          .registerStt('scripted_stt', () => new ScriptedStt([]))
          .registerLlm('scripted_llm', () => llm)
          .registerTts('tone_tts', () => tts),
      { SWITCHBOARD_DIALIN_HOLD_TIMEOUT_SECS: '30' },
      { captureLogs: true },
    );
    // The customer's server answers the webhook at once and starts the bot over HTTP straight away,
    // as examples/pinless-receiver.ts does.
    let botStarted!: (result: { status: number; body: string }) => void;
    const started = new Promise<{ status: number; body: string }>((resolve) => (botStarted = resolve));
    const receiver = await startWebhookReceiver(
      () => SECRET,
      200,
      (webhook) => {
        if (webhook.body.callId === undefined) return;
        void fetch(`${server.baseUrl}/v1/bots/start`, {
          method: 'POST',
          headers: { authorization: `Bearer ${TEST_KEY}`, 'content-type': 'application/json' },
          body: JSON.stringify({
            ...botBody(),
            dialin_settings: { callId: webhook.body.callId, callDomain: webhook.body.callDomain },
          }),
        }).then(async (res) => botStarted({ status: res.status, body: await res.text() }));
      },
    );
    onTestFinished(receiver.close);
    expect((await api(server, 'POST', '/v1/buy-phone-number', { number: NUMBER })).status).toBe(200);
    expect(
      (
        await api(server, 'POST', '/v1/', {
          properties: { pinless_dialin: [{ phone_number: NUMBER, room_creation_api: receiver.url, hmac: SECRET }] },
        })
      ).status,
    ).toBe(200);

    // The carrier opens the media stream 1.5 s after the customer's server had its bot started.
    const report = await runPhoneCall({
      target: { webhookUrl: `${server.baseUrl}/twilio/voice` },
      to: NUMBER,
      beforeMediaStream: async () => {
        const result = await started;
        expect(result.status, result.body).toBe(200);
        await new Promise((resolve) => setTimeout(resolve, 1500));
      },
      scenario: {
        steps: [
          { do: 'wait-bot-audio', timeoutMs: 20_000 },
          { do: 'wait-bot-silence', ms: 800, timeoutMs: 20_000 },
        ],
        endOfScript: 'hangup',
        maxDurationMs: 30_000,
      },
    });
    expect(report.outcome).toBe('completed');
    await server.waitForLog((r) => r.msg === 'phone caller joined the room');
    // What the caller heard is the bot's greeting (a tone of 40 ms a character), not a hold chime.
    expect(tts.pieces.join('')).toBe(greeting);
    expect(report.metrics.bot.receivedAudioMs).toBeGreaterThan(greeting.length * 40 * 0.8);
  });

  it('closes the room of a bot whose caller’s audio never connects within the hold timeout', async ({
    expect,
    onTestFinished,
  }) => {
    const server = await serve(
      onTestFinished,
      (registry) =>
        registry
          .registerStt('scripted_stt', () => new ScriptedStt([]))
          .registerLlm('scripted_llm', () => new ScriptedLlm({ replies: ['Hello.'] }))
          .registerTts('tone_tts', () => new ToneTts()),
      { SWITCHBOARD_DIALIN_HOLD_TIMEOUT_SECS: '5' },
      { captureLogs: true },
    );
    const receiver = await startWebhookReceiver(() => SECRET);
    onTestFinished(receiver.close);
    expect((await api(server, 'POST', '/v1/buy-phone-number', { number: NUMBER })).status).toBe(200);
    expect(
      (
        await api(server, 'POST', '/v1/', {
          properties: { pinless_dialin: [{ phone_number: NUMBER, room_creation_api: receiver.url, hmac: SECRET }] },
        })
      ).status,
    ).toBe(200);
    // The carrier fetches the TwiML and never connects the stream.
    const twiml = await fetch(`${server.baseUrl}/twilio/voice`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ To: NUMBER, From: '+15005550006', CallSid: 'CA7' }).toString(),
    });
    const streamUrl = /<Stream url="([^"]+)"/.exec(await twiml.text())![1]!;
    const webhook = await waitFor(() => receiver.received.find((r) => r.body.callId !== undefined));
    const start = await api(server, 'POST', '/v1/bots/start', {
      ...botBody(),
      dialin_settings: { callId: webhook.body.callId, callDomain: webhook.body.callDomain },
    });
    expect(start.status).toBe(200);
    const room = String(start.body.room_url).split('/rooms/')[1];

    await server.waitForLog(
      (r) => r.msg === 'room closed' && r.room === room && r.reason === 'the dial-in caller’s audio never connected',
    );
    expect(
      server.logs.some(
        (r) => r.msg === 'the dial-in caller’s audio did not connect in time; the bot that took the call is let go',
      ),
    ).toBe(true);
    // Audio that turns up after all is turned away rather than put into a closed room.
    const late = await runPhoneCall({ target: { wssUrl: streamUrl }, scenario: { steps: [], endOfScript: 'stay' } });
    expect(late.close).toMatchObject({ code: 4404, reason: 'unknown or finished dial-in call' });
  });

  it('routes a SIP interconnect call by its sip_uri, which stays the same when other entries change', async ({
    expect,
    onTestFinished,
  }) => {
    const server = await serve(onTestFinished, () => undefined);
    const receiver = await startWebhookReceiver(() => SECRET);
    onTestFinished(receiver.close);
    const trunk = { room_creation_api: receiver.url, name_prefix: 'trunk', hmac: SECRET };
    const first = await api(server, 'POST', '/v1/', { properties: { pinless_dialin: [trunk] } });
    const sipUri: string = first.body.config.pinless_dialin[0].sip_uri;
    expect(sipUri).toMatch(/^sip:dialin-[0-9a-f]{16}@sip\.127\.0\.0\.1$/);
    expect((await api(server, 'POST', '/v1/buy-phone-number', { number: NUMBER })).status).toBe(200);
    const second = await api(server, 'POST', '/v1/', {
      properties: { pinless_dialin: [{ phone_number: NUMBER, room_creation_api: receiver.url }, trunk] },
    });
    expect(second.body.config.pinless_dialin[1].sip_uri).toBe(sipUri);
    const twin = await api(server, 'POST', '/v1/', {
      properties: { pinless_dialin: [trunk, { ...trunk, hmac: undefined }] },
    });
    expect(twin.status).toBe(400);
    expect(twin.body.info).toContain('same room_creation_api and name_prefix');

    // The carrier's SIP domain puts its own host (and parameters) after the user part.
    const user = sipUri.slice('sip:'.length, sipUri.indexOf('@'));
    const to = `sip:${user}@acme.sip.twilio.com;transport=udp`;
    const res = await fetch(`${server.baseUrl}/twilio/voice`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ To: to, From: 'sip:alice@pbx.example.com', CallSid: 'CA2' }).toString(),
    });
    expect(await res.text()).toMatch(/<Stream url="ws:\/\/127\.0\.0\.1:\d+\/ws\/dialin\/[0-9a-f-]{36}">/);
    const webhook = await waitFor(() => receiver.received.find((r) => r.body.callId !== undefined));
    expect(webhook.body).toMatchObject({ To: to, From: 'sip:alice@pbx.example.com' });
    expect(webhook.signatureValid).toBe(true);
  });

  it('plays the entry’s hold_music_url (a WAV, fetched once) instead of the chime, and the chime for a file it cannot use', async ({
    expect,
    onTestFinished,
  }) => {
    const server = await serve(onTestFinished, () => undefined, {}, { captureLogs: true });
    const receiver = await startWebhookReceiver(() => SECRET);
    onTestFinished(receiver.close);
    // A steady 16 kHz tone: unlike the chime, it has no quiet second in each two.
    const tone = new Int16Array(16_000 * 2).map((_, i) =>
      Math.round(8000 * Math.sin((2 * Math.PI * 440 * i) / 16_000)),
    );
    const files = await startFileServer({
      '/music.wav': { type: 'audio/wav', body: encodePcm16Wav(tone, 16_000) },
      '/music.mp3': { type: 'audio/mpeg', body: new Uint8Array(4096) },
    });
    onTestFinished(files.close);
    const other = '+14155550178';
    for (const number of [NUMBER, other])
      expect((await api(server, 'POST', '/v1/buy-phone-number', { number })).status).toBe(200);
    const configured = await api(server, 'POST', '/v1/', {
      properties: {
        pinless_dialin: [
          {
            phone_number: NUMBER,
            room_creation_api: receiver.url,
            hmac: SECRET,
            hold_music_url: `${files.url}/music.wav`,
          },
          {
            phone_number: other,
            room_creation_api: receiver.url,
            hmac: SECRET,
            hold_music_url: `${files.url}/music.mp3`,
          },
        ],
      },
    });
    expect(configured.status).toBe(200);

    const hold = async (to: string) => {
      const call = new PhoneCall({
        target: { webhookUrl: `${server.baseUrl}/twilio/voice` },
        to,
        record: true,
        scenario: { steps: [], endOfScript: 'stay', maxDurationMs: 4500 },
      });
      const report = await call.run();
      return { report, botMulaw: call.recording!.botMulaw() };
    };
    // Two callers on the music at once (one fetch between them) and one on the unusable file, all
    // three held at the same time.
    const [withMusic, secondCaller, withBadFile] = await Promise.all([hold(NUMBER), hold(NUMBER), hold(other)]);
    await server.waitForLog((r) => r.msg === 'hold music loaded');
    // From the second loop at the latest, the tone plays through what is the chime's quiet part.
    const quietPartOfChime = (call: { botMulaw: Uint8Array }) =>
      rmsLevel(decodeMulaw(call.botMulaw.subarray(8 * 2900, 8 * 3800)));
    expect(quietPartOfChime(withMusic)).toBeGreaterThan(0.05);
    expect(quietPartOfChime(secondCaller)).toBeGreaterThan(0.05);
    expect(files.requests.filter((path) => path === '/music.wav')).toHaveLength(1);

    await server.waitForLog(
      (r) => r.msg === 'hold music could not be used; playing the chime' && String(r.err).includes('not a WAV'),
    );
    expect(quietPartOfChime(withBadFile)).toBeLessThan(0.01);
    expect(withBadFile.report.metrics.bot.receivedAudioMs).toBeGreaterThan(4000);
  });

  it('answers a number without dial-in, and an unknown stream, politely', async ({ expect, onTestFinished }) => {
    const server = await serve(onTestFinished, () => undefined);
    const res = await fetch(`${server.baseUrl}/twilio/voice`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ To: '+14155550100', From: '+15005550006', CallSid: 'CA1' }).toString(),
    });
    expect(res.status).toBe(200);
    expect(await res.text()).toContain('<Say>This number is not connected to an assistant.</Say>');

    const report = await runPhoneCall({
      target: { wssUrl: `${server.baseUrl.replace(/^http/, 'ws')}/ws/dialin/nope` },
      scenario: { steps: [], endOfScript: 'stay' },
    });
    expect(report.close).toMatchObject({ code: 4404, reason: 'unknown or finished dial-in call' });
  });
});

/** A start-bot body for the scripted providers; the bot speaks first. */
function botBody(): Record<string, unknown> {
  return {
    bot_profile: 'voice_2024_10',
    services: { stt: 'scripted_stt', llm: 'scripted_llm', tts: 'tone_tts' },
    config: [
      {
        service: 'llm',
        options: [
          { name: 'initial_messages', value: [{ role: 'system', content: 'You are the front desk.' }] },
          { name: 'run_on_config', value: true },
        ],
      },
    ],
    max_duration: 120,
  };
}

/** Serves fixed files and records the paths asked for. */
async function startFileServer(
  files: Record<string, { type: string; body: Uint8Array }>,
): Promise<{ url: string; requests: string[]; close(): Promise<void> }> {
  const requests: string[] = [];
  const httpServer: Server = createServer((req, res) => {
    requests.push(req.url ?? '');
    const file = files[req.url ?? ''];
    if (!file) return res.writeHead(404).end();
    res.writeHead(200, { 'content-type': file.type }).end(file.body);
  });
  await new Promise<void>((resolve) => httpServer.listen(0, '127.0.0.1', resolve));
  const { port } = httpServer.address() as AddressInfo;
  return {
    url: `http://localhost:${port}`,
    requests,
    close: () => new Promise<void>((resolve) => httpServer.close(() => resolve())),
  };
}
