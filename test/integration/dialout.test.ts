import { afterEach, describe, expect, it } from 'vitest';
import { readMulawFile } from '../../src/tools/simulator/clip-file.js';
import { runPhoneCall } from '../../src/tools/simulator/phone-call.js';
import { twilioSignatureFor } from '../../src/telephony/twilio-signature.js';
import { startFakeTwilioRest } from '../fakes/fake-twilio-rest.js';
import { type ScriptedToolTurn, ScriptedLlm, ScriptedStt, ToneTts } from '../fakes/scripted-providers.js';
import { type CallServer, startCallServer } from '../helpers/call-server.js';
import { TEST_KEY } from '../helpers/test-data.js';
import { waitFor } from '../helpers/wait.js';
import { type Clock, scaledClock } from '../../src/shared/clock.js';

/**
 * Dial-out over real sockets: POST /v1/bots/start with dialout_settings, the carrier placing the
 * calls (the sandbox carrier simulating callees end to end through the status callbacks, the
 * answer webhook and the media stream; Twilio's REST API faked), legs joining the room on answer.
 *
 * The server, its sandbox carrier and callee, and the simulated caller share a clock
 * (shared/clock.ts) SPEED times faster than wall time: what these tests check is who rings, who
 * answers and what is said, not how long it takes (docs/testing.md).
 */
const SPEED = 3;
const FAST: Clock = scaledClock(SPEED);

const GREETING = 'Hello, this is the clinic calling about your appointment.';
const ANSWERS = ['Great, we will see you on Tuesday at ten.', 'Thank you, goodbye.'];
const AUTH_TOKEN = 'twilio-auth-token-for-tests-0001';
const FROM = '+12125550101';

let server: CallServer | undefined;
const closers: Array<() => Promise<void>> = [];

afterEach(async () => {
  await server?.close();
  server = undefined;
  for (const close of closers.splice(0)) await close();
});

interface Bot {
  server: CallServer;
  stt: ScriptedStt;
  llm: ScriptedLlm;
  api(method: string, path: string, payload?: unknown): Promise<{ status: number; body: any }>;
  start(dialout: unknown, maxDurationSecs?: number): Promise<string>;
}

async function startServer(
  env: Record<string, string> = {},
  replies: Array<string | ScriptedToolTurn> = [GREETING, ...ANSWERS],
): Promise<Bot> {
  const stt = new ScriptedStt(['Yes, Tuesday at ten works for me.', 'No, that is all.']);
  const llm = new ScriptedLlm({ replies });
  const tts = new ToneTts(20);
  server = await startCallServer(
    (registry) => {
      registry
        .registerStt('scripted_stt', () => stt)
        .registerLlm('scripted_llm', () => llm)
        .registerTts('tone_tts', () => tts);
    },
    { SWITCHBOARD_ROOM_EMPTY_GRACE_SECS: '0', ...env },
    { captureLogs: true, clock: FAST },
  );
  const s = server;
  const api: Bot['api'] = async (method, path, payload) => {
    const res = await s.app.inject({
      method: method as 'POST',
      url: path,
      headers: { authorization: `Bearer ${TEST_KEY}` },
      ...(payload ? { payload } : {}),
    });
    return { status: res.statusCode, body: res.json() };
  };
  return {
    server: s,
    stt,
    llm,
    api,
    async start(dialout, maxDurationSecs = 120) {
      const res = await api('POST', '/v1/bots/start', {
        bot_profile: 'voice_2024_10',
        services: { stt: 'scripted_stt', llm: 'scripted_llm', tts: 'tone_tts' },
        config: [
          { service: 'vad', options: [{ name: 'params', value: { stop_secs: 0.4 } }] },
          { service: 'llm', options: [{ name: 'run_on_config', value: true }] },
        ],
        max_duration: maxDurationSecs,
        dialout_settings: dialout,
      });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      return (res.body.room_url as string).split('/rooms/')[1]!;
    },
  };
}

const byMsg =
  (msg: string, extra: (r: Record<string, unknown>) => boolean = () => true) =>
  (r: Record<string, unknown>) =>
    r.msg === msg && extra(r);

describe('dial-out on the sandbox carrier', () => {
  it('dials a sandbox number from the caller id; the callee answers, hears the greeting, talks with the bot twice and hangs up', async () => {
    // With an auth token set, every carrier request (status, answer, media) is signed and checked.
    const bot = await startServer({ TWILIO_AUTH_TOKEN: AUTH_TOKEN });
    const bought = await bot.api('POST', '/v1/buy-phone-number', { number: FROM });
    await bot.api('POST', '/v1/buy-phone-number', { number: '+12125550102' });
    const room = await bot.start([{ phoneNumber: '+14155550123', callerId: bought.body.id }]);

    const dialling = await bot.server.waitForLog(byMsg('dialling out', (r) => r.room === room));
    expect(dialling).toMatchObject({ to: '+14155550123', from: FROM });
    await bot.server.waitForLog(byMsg('phone leg connected', (r) => r.room === room && r.who === '+14155550123'));
    const callee = await bot.server.waitForLog(byMsg('sandbox callee hung up'), 60_000);

    // The callee heard the greeting and both answers, and each of its two turns got a reply.
    expect(callee).toMatchObject({ outcome: 'completed', to: '+14155550123', calleeTurns: 2 });
    expect(callee.botAudioMs).toBeGreaterThan(2000);
    expect(callee.replyLatenciesMs).toEqual([expect.any(Number), expect.any(Number)]);
    expect(bot.llm.requests).toHaveLength(3);
    expect(JSON.stringify(bot.llm.requests[2]!.messages)).toContain('Tuesday at ten works for me');

    // The callee hung up: the room, now empty, closed.
    await bot.server.waitForLog(byMsg('room closed', (r) => r.room === room && r.reason === 'everyone left'));
    expect(bot.server.logs.filter((r) => r.msg === 'twilio webhook signature rejected')).toEqual([]);
  }, 90_000);

  it('send_dtmf on a dial-out: the callee hears the keys the bot pressed after its greeting', async () => {
    const bot = await startServer({}, [
      { text: GREETING, calls: [{ name: 'send_dtmf', arguments: { digits: '1#' }, id: 'call_keys' }] },
      ...ANSWERS,
    ]);
    await bot.api('POST', '/v1/buy-phone-number', { number: FROM });
    const res = await bot.api('POST', '/v1/bots/start', {
      bot_profile: 'voice_2024_10',
      services: { stt: 'scripted_stt', llm: 'scripted_llm', tts: 'tone_tts' },
      config: [
        { service: 'vad', options: [{ name: 'params', value: { stop_secs: 0.4 } }] },
        {
          service: 'llm',
          options: [
            { name: 'run_on_config', value: true },
            { name: 'tools', value: [{ type: 'function', function: { name: 'send_dtmf' } }] },
          ],
        },
      ],
      max_duration: 120,
      dialout_settings: [{ phoneNumber: '+14155550123' }],
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const callee = await bot.server.waitForLog(byMsg('sandbox callee hung up'), 60_000);
    expect(callee).toMatchObject({ outcome: 'completed', keysHeard: '1#' });
    const second = bot.llm.requests[1]!.messages;
    expect(JSON.parse(second.find((m) => m.role === 'tool')!.content)).toMatchObject({ sent: '1#' });
  }, 90_000);

  it('ends busy, unanswered and unreachable legs cleanly, logged with their outcome, and closes a room nobody answered', async () => {
    const bot = await startServer({ SWITCHBOARD_DIALOUT_RING_TIMEOUT_SECS: '5' });
    await bot.api('POST', '/v1/buy-phone-number', { number: FROM });
    const room = await bot.start([
      { phoneNumber: '+14155550198' },
      { sipUri: 'sip:+14155550199@sandbox.example.com' },
      { phoneNumber: '+14155550197' },
    ]);

    for (const [to, outcome] of [
      ['+14155550198', 'busy'],
      ['sip:+14155550199@sandbox.example.com', 'failed'],
      ['+14155550197', 'no-answer'],
    ]) {
      const ended = await bot.server.waitForLog(byMsg(`dial-out to ${to} ended: ${outcome}`), 15_000);
      expect(ended).toMatchObject({ level: 40, room, to, outcome });
    }
    await bot.server.waitForLog(
      byMsg('room closed', (r) => r.room === room && r.reason === 'no dial-out target answered'),
    );
    // No bot ever started: nobody was there to hear it.
    expect(bot.llm.requests).toHaveLength(0);
    const metrics = await (await fetch(`${bot.server.baseUrl}/metrics`)).text();
    for (const outcome of ['busy', 'no-answer', 'failed'])
      expect(metrics).toContain(`switchboard_dialout_legs_total{outcome="${outcome}"} 1`);
  }, 30_000);

  it('a telephony bot with dialout_settings brings the callee into the caller’s call', async () => {
    const bot = await startServer();
    await bot.api('POST', '/v1/buy-phone-number', { number: FROM });
    const { id } = await bot.server.createConfig({
      services: { stt: 'scripted_stt', llm: 'scripted_llm', tts: 'tone_tts' },
      config: [
        { service: 'vad', options: [{ name: 'params', value: { stop_secs: 0.4 } }] },
        { service: 'llm', options: [{ name: 'run_on_config', value: true }] },
      ],
      api_keys: {},
      dialout_settings: [{ phoneNumber: '+13125550142' }],
    });
    const hangUp = new AbortController();
    void bot.server.waitForLog(byMsg('sandbox callee hung up'), 60_000).then(() => hangUp.abort());
    const caller = await runPhoneCall({
      target: { webhookUrl: `${bot.server.baseUrl}/twilio/voice/${id}` },
      clock: FAST,
      scenario: { steps: [], endOfScript: 'stay', maxDurationMs: 60_000 },
      signal: hangUp.signal,
    });
    const callee = await bot.server.waitForLog(byMsg('sandbox callee hung up'));
    expect(callee).toMatchObject({ outcome: 'completed', to: '+13125550142', calleeTurns: 2 });
    expect(callee.replyLatenciesMs).toEqual([expect.any(Number), expect.any(Number)]);
    // The silent caller heard the whole conversation: the greeting and both answers.
    expect(caller.outcome).toBe('aborted');
    expect(caller.metrics.bot.receivedAudioMs).toBeGreaterThan(2000);
    expect(bot.llm.requests).toHaveLength(3);
    const callerLeg = await bot.server.waitForLog(byMsg('telephony call in a room, dialling out'));
    expect(callerLeg).toMatchObject({ targets: 1 });
    // The room is the caller's call: their hang-up ends it.
    await bot.server.waitForLog(
      byMsg('room closed', (r) => r.room === callerLeg.room && r.reason === 'caller hung up'),
    );
  }, 90_000);

  it('refuses carrier requests that are not signed, and answers stale legs politely', async () => {
    const bot = await startServer({ TWILIO_AUTH_TOKEN: AUTH_TOKEN });
    const base = bot.server.baseUrl;
    const form = new URLSearchParams({ CallSid: 'CA1', CallStatus: 'ringing' }).toString();
    const headers = { 'content-type': 'application/x-www-form-urlencoded' };
    const unsigned = await fetch(`${base}/twilio/dialout/some-leg/status`, { method: 'POST', headers, body: form });
    expect(unsigned.status).toBe(403);

    const url = `${bot.server.baseUrl}/twilio/dialout/finished-leg`;
    const signature = twilioSignatureFor(AUTH_TOKEN, url, { CallSid: 'CA1', CallStatus: 'in-progress' });
    const stale = await fetch(url, {
      method: 'POST',
      headers: { ...headers, 'x-twilio-signature': signature },
      body: new URLSearchParams({ CallSid: 'CA1', CallStatus: 'in-progress' }).toString(),
    });
    expect(stale.status).toBe(200);
    expect(await stale.text()).toContain('<Say>Sorry, this call is no longer needed. Goodbye.</Say><Hangup/>');
  });
});

describe('dial-out through Twilio', () => {
  const SID = `AC${'d'.repeat(32)}`;

  it('places the call with Calls.json (answer URL, status callbacks, timeout), joins the leg on answer, and cancels ringing legs when the room closes', async () => {
    const twilio = await startFakeTwilioRest(SID, AUTH_TOKEN);
    closers.push(twilio.close);
    const bot = await startServer({
      SWITCHBOARD_CARRIER: 'twilio',
      TWILIO_ACCOUNT_SID: SID,
      TWILIO_AUTH_TOKEN: AUTH_TOKEN,
      SWITCHBOARD_TWILIO_URL: twilio.url,
    });
    const bought = await bot.api('POST', '/v1/buy-phone-number', { number: '+14155550142' });
    expect(bought.status).toBe(200);
    // Twilio decides what it can reach: a real number is dialled, not refused up front.
    const room = await bot.start({ phoneNumber: '+14155551234' });

    const callRequest = await waitFor(() => twilio.requests.find((r) => r.path.endsWith('/Calls.json')));
    const base = `${bot.server.baseUrl}/twilio/dialout/`;
    expect(callRequest.method).toBe('POST');
    expect(callRequest.path).toBe(`/2010-04-01/Accounts/${SID}/Calls.json`);
    expect(callRequest.form).toMatchObject({
      To: '+14155551234',
      From: '+14155550142',
      Method: 'POST',
      StatusCallbackMethod: 'POST',
      Timeout: '30',
    });
    expect(callRequest.form.Url).toMatch(new RegExp(`^${base}[0-9a-f-]{36}$`));
    expect(callRequest.form.StatusCallback).toBe(`${callRequest.form.Url}/status`);
    expect(callRequest.formLists.StatusCallbackEvent).toEqual(['initiated', 'ringing', 'answered', 'completed']);

    // Twilio's side of the call: ringing, then the callee answers and its stream plays two lines.
    const statusUrl = callRequest.form.StatusCallback!;
    const callSid = `CA${'0'.repeat(31)}1`;
    expect(await postSigned(statusUrl, { CallSid: callSid, CallStatus: 'ringing' })).toBe(204);
    const line = await readMulawFile('fixtures/audio/A06_birch_canoe.ulaw');
    const report = await runPhoneCall({
      target: { webhookUrl: callRequest.form.Url! },
      clock: FAST,
      callSid,
      direction: 'outbound-api',
      from: '+14155550142',
      to: '+14155551234',
      authToken: AUTH_TOKEN,
      clips: { line: { mulaw: line } },
      scenario: {
        steps: [
          { do: 'wait-bot-silence', ms: 600, timeoutMs: 15_000 },
          { do: 'play', clip: 'line' },
          { do: 'wait-bot-audio' },
          { do: 'wait-bot-silence', ms: 600 },
        ],
        endOfScript: 'hangup',
        maxDurationMs: 40_000,
      },
    });
    expect(report.customParameters).toMatchObject({ room });
    expect(report.outcome).toBe('completed');
    expect(report.metrics.firstBotAudioMs).not.toBeNull();
    expect(report.metrics.replyLatenciesMs).toHaveLength(1);
    expect(await postSigned(statusUrl, { CallSid: callSid, CallStatus: 'completed', CallDuration: '9' })).toBe(204);
    await bot.server.waitForLog(byMsg('room closed', (r) => r.room === room && r.reason === 'everyone left'));

    // A second room whose callee is still ringing when the server shuts down: the call is cancelled.
    await bot.start([{ phoneNumber: '+14155559876' }]);
    const second = await waitFor(() => twilio.requests.filter((r) => r.path.endsWith('/Calls.json'))[1]);
    expect(
      await postSigned(second.form.StatusCallback!, { CallSid: `CA${'0'.repeat(31)}2`, CallStatus: 'ringing' }),
    ).toBe(204);
    await server!.close();
    server = undefined;
    const cancel = await waitFor(() => twilio.requests.find((r) => /\/Calls\/CA\w+\.json$/.test(r.path)));
    // The fake numbers its resources in order: the number bought, the first call, the second call.
    expect(cancel).toMatchObject({
      method: 'POST',
      path: `/2010-04-01/Accounts/${SID}/Calls/CA${String(3).padStart(32, '0')}.json`,
      form: { Status: 'canceled' },
    });
  }, 60_000);
});

describe('a dial-out leg cancelled by its room', () => {
  const SID = `AC${'e'.repeat(32)}`;

  it('is counted and logged once as canceled when max_duration closes the room while it rings; the carrier’s canceled callback adds nothing', async () => {
    const twilio = await startFakeTwilioRest(SID, AUTH_TOKEN);
    closers.push(twilio.close);
    const bot = await startServer({
      SWITCHBOARD_CARRIER: 'twilio',
      TWILIO_ACCOUNT_SID: SID,
      TWILIO_AUTH_TOKEN: AUTH_TOKEN,
      SWITCHBOARD_TWILIO_URL: twilio.url,
    });
    await bot.api('POST', '/v1/buy-phone-number', { number: '+14155550142' });
    const room = await bot.start([{ phoneNumber: '+14155551234' }], 1);
    const placed = await waitFor(() => twilio.requests.find((r) => r.path.endsWith('/Calls.json')));
    const statusUrl = placed.form.StatusCallback!;
    const callSid = `CA${'0'.repeat(31)}9`;
    expect(await postSigned(statusUrl, { CallSid: callSid, CallStatus: 'ringing' })).toBe(204);

    await bot.server.waitForLog(byMsg('room closed', (r) => r.room === room && r.reason === 'max_duration'));
    const cancel = await waitFor(() => twilio.requests.find((r) => /\/Calls\/CA\w+\.json$/.test(r.path)));
    expect(cancel.form).toMatchObject({ Status: 'canceled' });
    // Twilio confirms the cancel with a status callback, and may repeat it.
    expect(await postSigned(statusUrl, { CallSid: callSid, CallStatus: 'canceled' })).toBe(204);
    expect(await postSigned(statusUrl, { CallSid: callSid, CallStatus: 'canceled' })).toBe(204);

    const metrics = await (await fetch(`${bot.server.baseUrl}/metrics`)).text();
    expect(metrics).toContain('switchboard_dialout_legs_total{outcome="canceled"} 1');
    const ended = bot.server.logs.filter((r) => typeof r.msg === 'string' && r.msg.startsWith('dial-out to '));
    expect(ended).toEqual([expect.objectContaining({ msg: 'dial-out to +14155551234 ended: canceled', room })]);
  }, 30_000);
});

async function postSigned(url: string, form: Record<string, string>): Promise<number> {
  const res = await fetch(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      'x-twilio-signature': twilioSignatureFor(AUTH_TOKEN, url, form),
    },
    body: new URLSearchParams(form).toString(),
  });
  await res.body?.cancel();
  return res.status;
}
