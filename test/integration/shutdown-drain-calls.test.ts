import { afterEach, describe, expect, it } from 'vitest';
import { type RunningEmulators, startEmulatorServer } from '../../src/tools/emulators/emulator-server.js';
import { OpenAiRealtimeEmulator } from '../../src/tools/emulators/openai-realtime-emulator.js';
import { EnvError, loadConfig } from '../../src/config/env.js';
import { LiveCalls } from '../../src/lifecycle/live-calls.js';
import { createLogger } from '../../src/observability/logger.js';
import { PHRASES } from '../../src/pipeline/call-deps.js';
import type { TimelineEvent } from '../../src/tools/simulator/call-report.js';
import { PhoneCall } from '../../src/tools/simulator/phone-call.js';
import { CLOSE } from '../../src/shared/close-codes.js';
import { startWebhookReceiver } from '../fakes/webhook-receiver.js';
import { ScriptedLlm, ScriptedStt, ToneTts } from '../fakes/scripted-providers.js';
import { type CallServer, startCallServer } from '../helpers/call-server.js';
import { RoomClient } from '../helpers/room-client.js';
import { TEST_KEY } from '../helpers/test-data.js';

/**
 * The drain for each kind of live call, in process over real sockets: rooms, speech-to-speech
 * calls and dial-in callers on hold go on while the server drains, and at the drain limit they
 * hear a goodbye (or the no-bot message) and are closed with 1001. The signal handling and the
 * pipeline phone call are covered against a real `switchboard serve` in shutdown-drain.test.ts.
 */

/** Short: the room and the speech-to-speech call wait for it to end, in real time, before the drain. */
const GREETING = 'Hello.';
const log = createLogger('silent');

let server: CallServer | undefined;
let emulators: RunningEmulators | undefined;
const cleanups: Array<() => unknown> = [];

afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
  await server?.close();
  await emulators?.close();
  server = undefined;
  emulators = undefined;
});

async function api(method: 'GET' | 'POST', url: string, payload?: unknown) {
  const res = await server!.app.inject({
    method,
    url,
    headers: { authorization: `Bearer ${TEST_KEY}` },
    ...(payload ? { payload } : {}),
  });
  return { status: res.statusCode, body: res.json() as Record<string, unknown> };
}

/** Resolves with the first timeline event of `kind`, whether it happened already or happens later. */
function timelineWatcher() {
  const seen: TimelineEvent[] = [];
  const waiters: Array<{ kind: TimelineEvent['kind']; resolve: (e: TimelineEvent) => void }> = [];
  return {
    onEvent(event: TimelineEvent) {
      seen.push(event);
      for (const w of waiters.filter((w) => w.kind === event.kind)) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve(event);
      }
    },
    first(kind: TimelineEvent['kind']): Promise<TimelineEvent> {
      const found = seen.find((e) => e.kind === kind);
      return found ? Promise.resolve(found) : new Promise((resolve) => waiters.push({ kind, resolve }));
    },
  };
}

const START_BODY = {
  bot_profile: 'voice_2024_10',
  services: { stt: 'scripted_stt', llm: 'scripted_llm', tts: 'tone_tts' },
  config: [{ service: 'llm', options: [{ name: 'run_on_config', value: true }] }],
  max_duration: 120,
};

describe('draining live calls', () => {
  it('a room: nobody new joins, an empty room closes at once, and at the limit the bot says goodbye and everyone is closed with 1001', async () => {
    const liveCalls = new LiveCalls();
    const stt = new ScriptedStt([]);
    const llm = new ScriptedLlm({ replies: [GREETING] });
    const tts = new ToneTts();
    server = await startCallServer(
      (registry) =>
        registry
          .registerStt('scripted_stt', () => stt)
          .registerLlm('scripted_llm', () => llm)
          .registerTts('tone_tts', () => tts),
      {},
      { liveCalls },
    );
    const wsBase = server.baseUrl.replace(/^http/, 'ws');
    const used = await api('POST', '/v1/bots/start', START_BODY);
    const unused = await api('POST', '/v1/bots/start', START_BODY);
    expect(used.status).toBe(200);
    const roomName = (r: typeof used) => String(r.body.room_url).split('/rooms/')[1]!;
    const alice = await RoomClient.connect(`${wsBase}/rooms/${roomName(used)}/ws`, String(used.body.token));
    cleanups.push(() => alice.close());
    await alice.until('the greeting', () => alice.of('bot-stopped-speaking').length >= 1);

    const drained = liveCalls.drain(1000, log);
    // The room nobody joined has nobody to wait for; the one in use goes on, closed to newcomers.
    expect((await server.app.inject({ method: 'GET', url: `/rooms/${roomName(unused)}` })).statusCode).toBe(404);
    const bob = await RoomClient.connect(`${wsBase}/rooms/${roomName(used)}/ws`, String(used.body.token));
    expect(await bob.untilClosed()).toMatchObject({ code: 1001 });
    const refused = await api('POST', '/v1/bots/start', START_BODY);
    expect(refused).toEqual({
      status: 503,
      body: { error: 'service-unavailable', info: expect.stringMatching(/shutting down/) },
    });

    expect(await alice.untilClosed(60_000)).toMatchObject({ code: 1001 });
    expect(alice.of('bot-transcription').at(-1)!.data!.text).toBe(PHRASES.shutdown);
    expect(alice.of('bot-started-speaking')).toHaveLength(2);
    await drained;
    expect(liveCalls.count).toBe(0);
  });

  it('a speech-to-speech call: at the limit the offline voice says goodbye and the call closes with 1001', async () => {
    const liveCalls = new LiveCalls();
    const realtime = new OpenAiRealtimeEmulator({
      latencies: { llmFirstTokenMs: 80, ttsFirstByteMs: 40, ttsRealTimeFactor: 4 },
      replies: [GREETING],
    });
    emulators = await startEmulatorServer([realtime]);
    server = await startCallServer(() => undefined, { SWITCHBOARD_OPENAI_URL: emulators.url }, { liveCalls });
    const { wssUrl } = await server.createConfig({
      bot_profile: 'openai_realtime_beta_2024_10',
      services: { llm: 'openai_realtime' },
      config: [{ service: 'llm', options: [{ name: 'run_on_config', value: true }] }],
    });
    const events = timelineWatcher();
    const call = new PhoneCall({
      target: { wssUrl },
      scenario: { steps: [], endOfScript: 'stay' },
      onEvent: (e) => events.onEvent(e),
    });
    const report = call.run();
    const greetingEnd = await events.first('bot-audio-end');

    await liveCalls.drain(0, log);
    const result = await report;
    expect(result.close).toMatchObject({ code: CLOSE.goingAway, by: 'server' });
    // The goodbye: bot audio after the greeting had ended.
    expect(result.timeline.some((e) => e.kind === 'bot-audio-start' && e.atMs > greetingEnd.atMs)).toBe(true);
    expect(liveCalls.count).toBe(0);
  });

  it('a dial-in caller on hold: new calls to the number get 503, and at the limit the caller hears the no-bot message and is closed with 1001', async () => {
    const liveCalls = new LiveCalls();
    const number = '+14155550177';
    const secret = Buffer.alloc(32, 9).toString('base64');
    server = await startCallServer(() => undefined, {}, { liveCalls });
    // The customer's server hears of the call but never starts a bot.
    const receiver = await startWebhookReceiver((to) => (to === number ? secret : undefined));
    cleanups.push(receiver.close);
    expect((await api('POST', '/v1/buy-phone-number', { number })).status).toBe(200);
    const configured = await api('POST', '/v1/', {
      properties: {
        pinless_dialin: [
          {
            phone_number: number,
            room_creation_api: receiver.url,
            hmac: secret,
            timeout_config: { message: 'Goodbye.' },
          },
        ],
      },
    });
    expect(configured.status).toBe(200);

    const events = timelineWatcher();
    const call = new PhoneCall({
      target: { webhookUrl: `${server.baseUrl}/twilio/voice` },
      to: number,
      scenario: { steps: [], endOfScript: 'stay' },
      onEvent: (e) => events.onEvent(e),
    });
    const report = call.run();
    await events.first('bot-audio-start');

    const drained = liveCalls.drain(500, log);
    const another = await fetch(`${server.baseUrl}/twilio/voice`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ CallSid: 'CA2', From: '+15005550006', To: number }),
    });
    expect(another.status).toBe(503);
    expect(await another.text()).toContain('<Hangup/>');

    const result = await report;
    expect(result.close).toMatchObject({ code: CLOSE.goingAway, reason: 'no bot', by: 'server' });
    await drained;
    expect(liveCalls.count).toBe(0);
  });
});

describe('SWITCHBOARD_DRAIN_TIMEOUT_SECS', () => {
  it('defaults to 30 s, takes whole seconds from 0 to 3600, and a bad value stops start-up naming it', () => {
    expect(loadConfig({}).drainTimeoutSecs).toBe(30);
    expect(loadConfig({ SWITCHBOARD_DRAIN_TIMEOUT_SECS: '0' }).drainTimeoutSecs).toBe(0);
    expect(loadConfig({ SWITCHBOARD_DRAIN_TIMEOUT_SECS: '120' }).drainTimeoutSecs).toBe(120);
    for (const bad of ['soon', '-1', '1.5', '3601']) {
      expect(() => loadConfig({ SWITCHBOARD_DRAIN_TIMEOUT_SECS: bad })).toThrow(EnvError);
      expect(() => loadConfig({ SWITCHBOARD_DRAIN_TIMEOUT_SECS: bad })).toThrow(/SWITCHBOARD_DRAIN_TIMEOUT_SECS/);
    }
  });
});
