import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/env.js';
import { Frame } from '../../src/rooms/pipecat-frames.js';
import { ScriptedLlm, ScriptedStt, ToneTts } from '../fakes/scripted-providers.js';
import { type CallServer, startCallServer } from '../helpers/call-server.js';
import { PipecatWsClient } from '../helpers/pipecat-ws-client.js';
import { fixturePcm } from '../helpers/room-client.js';
import { TEST_KEY } from '../helpers/test-data.js';

/**
 * Rooms spoken to the way Pipecat's websocket transport speaks (protobuf frames made by the
 * transport's own serializer, RTVI messages inside message frames), over a real websocket to a
 * real server: Silero VAD, turn-taking, Playout and the room transport, with scripted STT, LLM
 * and TTS. The browser test drives the real SDK; this one covers the protocol where Chromium is
 * missing.
 */

const GREETING = 'Hello, this is the front desk.';
const ANSWER = 'Yes, the canoe is ready for you at the dock.';
const LONG_REPLY =
  'We have rooms with a view of the harbour, rooms with a garden terrace, and family suites with two bedrooms, ' +
  'and every stay includes breakfast, parking, and late checkout on Sundays if you ask at the desk.';
const HEARD = 'a birch canoe slid on the smooth planks';
/** ToneTts speaks 40 ms per character. */
const TONE_MS_PER_CHAR = 40;

let server: CallServer | undefined;
const clients: PipecatWsClient[] = [];

afterEach(async () => {
  for (const client of clients.splice(0)) client.close();
  await server?.close();
  server = undefined;
});

const startBody = {
  bot_profile: 'voice_2024_10',
  services: { stt: 'scripted_stt', llm: 'scripted_llm', tts: 'tone_tts' },
  config: [
    { service: 'vad', options: [{ name: 'params', value: { stop_secs: 0.4 } }] },
    { service: 'llm', options: [{ name: 'run_on_config', value: true }] },
  ],
  max_duration: 120,
};

async function startServer(replies: string[], captureLogs = false) {
  const stt = new ScriptedStt([HEARD, HEARD]);
  const llm = new ScriptedLlm({ replies });
  const tts = new ToneTts();
  server = await startCallServer(
    (registry) => {
      registry
        .registerStt('scripted_stt', () => stt)
        .registerLlm('scripted_llm', () => llm)
        .registerTts('tone_tts', () => tts);
    },
    {},
    { publicHost: 'localhost', captureLogs },
  );
  const s = server;
  return {
    stt,
    llm,
    /** POST /v1/bots/start over HTTP, as startBotAndConnect does. */
    async start(extra: Record<string, unknown> = { transport: 'websocket' }) {
      const res = await fetch(`${s.baseUrl}/v1/bots/start`, {
        method: 'POST',
        headers: { authorization: `Bearer ${TEST_KEY}`, 'content-type': 'application/json' },
        body: JSON.stringify({ ...startBody, ...extra }),
      });
      return { status: res.status, body: (await res.json()) as Record<string, string> };
    },
    async join(wsUrl: string, options?: { ready?: boolean }) {
      const client = await PipecatWsClient.connect(wsUrl, options);
      clients.push(client);
      return client;
    },
  };
}

describe('a room with a Pipecat websocket-transport client', () => {
  it('answers bots/start with only the ws_url the transport accepts, token inside; the spec answer stays the default', async () => {
    const bot = await startServer([GREETING]);
    const sdk = await bot.start();
    expect(sdk.status).toBe(200);
    // The transport refuses any key but its URL (and, in 1.7, `token`): nothing else may be there.
    expect(Object.keys(sdk.body)).toEqual(['ws_url']);
    const url = new URL(sdk.body.ws_url!);
    expect(url.protocol).toBe('ws:');
    expect(url.hostname).toBe('localhost');
    expect(url.pathname).toMatch(/^\/rooms\/[A-Za-z0-9_-]+\/ws$/);
    expect(url.searchParams.get('token')).toMatch(/^v1\./);

    const spec = await bot.start({});
    expect(spec.status).toBe(200);
    expect(Object.keys(spec.body).sort()).toEqual(['room_url', 'token']);

    const bad = await bot.start({ transport: 'daily' });
    expect(bad.status).toBe(400);
    expect(bad.body).toEqual({
      error: 'invalid-request-error',
      info: 'transport: transport must be "websocket" or "webrtc" (or left out for {room_url, token})',
    });
  });

  it('lets the origins in SWITCHBOARD_CORS_ORIGINS call bots/start from a browser, and no others', async () => {
    expect(() => loadConfig({ SWITCHBOARD_CORS_ORIGINS: 'https://app.example.com/path' })).toThrow(
      /SWITCHBOARD_CORS_ORIGINS: must be \* or comma-separated origins/,
    );
    const front = 'http://localhost:5173';
    server = await startCallServer(() => undefined, { SWITCHBOARD_CORS_ORIGINS: `https://app.example.com, ${front}` });
    const preflight = (origin: string) =>
      fetch(`${server!.baseUrl}/v1/bots/start`, {
        method: 'OPTIONS',
        headers: {
          origin,
          'access-control-request-method': 'POST',
          'access-control-request-headers': 'authorization,content-type',
        },
      });
    const allowed = await preflight(front);
    expect(allowed.status).toBe(204);
    expect(allowed.headers.get('access-control-allow-origin')).toBe(front);
    expect(allowed.headers.get('access-control-allow-headers')).toBe('authorization, content-type');
    expect((await preflight('https://evil.example')).headers.get('access-control-allow-origin')).toBeNull();
    // Errors carry the header too, so the SDK can read the reason.
    const refused = await fetch(`${server.baseUrl}/v1/bots/start`, {
      method: 'POST',
      headers: { origin: front, 'content-type': 'application/json' },
      body: '{}',
    });
    expect(refused.status).toBe(400);
    expect(refused.headers.get('access-control-allow-origin')).toBe(front);
    // The rest of the API stays server-to-server.
    const list = await fetch(`${server.baseUrl}/v1/bots/twilio-config`, {
      headers: { origin: front, authorization: `Bearer ${TEST_KEY}` },
    });
    expect(list.headers.get('access-control-allow-origin')).toBeNull();
  });

  it('greets in 24 kHz audio frames, hears 16 kHz microphone frames, and sends the RTVI events as message frames', async () => {
    const bot = await startServer([GREETING, ANSWER]);
    const { body } = await bot.start();
    const alice = await bot.join(body.ws_url!);

    await alice.until('bot-ready', () => alice.of('bot-ready').length === 1);
    expect(alice.of('bot-ready')[0]!.data).toMatchObject({ profile: 'voice_2024_10' });
    await alice.until('the greeting', () => alice.of('bot-stopped-speaking').length >= 1);
    // The transport plays every frame at its player rate (24 kHz by default), mono.
    expect([...alice.audioFormats]).toEqual(['24000/1']);
    expect((alice.audioSamples / 24000) * 1000).toBeGreaterThan(GREETING.length * TONE_MS_PER_CHAR * 0.9);
    expect(alice.of('bot-started-speaking')).toHaveLength(1);
    expect(
      alice
        .of('bot-llm-text')
        .map((m) => m.data!.text)
        .join(''),
    ).toContain('front desk');

    // The SDK's recorder default: 16 kHz mono frames, declared in each frame.
    await alice.stream(new Int16Array(16000 * 0.3), 16000);
    await alice.stream(fixturePcm('A06_birch_canoe.8k.wav', 16000), 16000);
    await alice.stream(new Int16Array(16000 * 1.2), 16000);
    await alice.until('the answer', () => alice.of('bot-transcription').some((m) => m.data!.text === ANSWER));

    expect(alice.of('user-started-speaking').length).toBeGreaterThanOrEqual(1);
    expect(alice.of('user-stopped-speaking').length).toBeGreaterThanOrEqual(1);
    expect(alice.of('user-transcription').find((m) => m.data!.final)?.data).toMatchObject({ text: HEARD, final: true });
    await alice.until('metrics', () => alice.of('metrics').length >= 1);
    expect(alice.of('metrics')[0]!.data!.turnLatencyMs).toBeGreaterThan(0);
    expect(bot.llm.requests[1]!.messages.at(-1)).toEqual({ role: 'user', content: HEARD });
    expect(alice.unreadable).toEqual([]);
    expect(alice.closed).toBeUndefined();
  });

  it('is interrupted by 48 kHz stereo speech: the bot stops, and the SDK got only the part that was heard', async () => {
    const bot = await startServer([LONG_REPLY, ANSWER]);
    const { body } = await bot.start();
    const alice = await bot.join(body.ws_url!);
    await alice.until('the bot talking', () => alice.audioSamples > 24000 * 1.5);

    const mono = fixturePcm('A06_birch_canoe.8k.wav', 48000);
    const stereo = new Int16Array(mono.length * 2);
    for (let i = 0; i < mono.length; i++) stereo[2 * i] = stereo[2 * i + 1] = mono[i]!;
    await alice.stream(stereo, 48000, 2);
    await alice.until('the interruption', () => alice.of('bot-stopped-speaking').length === 1);
    const samplesAtStop = alice.audioSamples;
    const types = alice.messages.map((m) => m.type);
    // What the SDK sees of a barge-in: the user starts speaking while the bot talks, then the bot stops.
    expect(types.indexOf('user-started-speaking')).toBeGreaterThan(types.indexOf('bot-started-speaking'));
    expect(types.indexOf('bot-stopped-speaking')).toBeGreaterThan(types.indexOf('user-started-speaking'));
    await alice.stream(new Int16Array(48000 * 2 * 1.2), 48000, 2);
    await alice.until('the answer', () => alice.of('bot-transcription').some((m) => m.data!.text === ANSWER));

    const heard = bot.llm.requests[1]!.messages.find((m) => m.role === 'assistant')!.content;
    expect(heard.length).toBeLessThan(LONG_REPLY.length);
    // The SDK got about what the context says was heard, far from the whole reply.
    expect((samplesAtStop / 24000) * 1000).toBeLessThan(LONG_REPLY.length * TONE_MS_PER_CHAR * 0.8);
    expect(bot.llm.requests[1]!.messages.at(-1)).toEqual({ role: 'user', content: HEARD });
    expect(alice.unreadable).toEqual([]);
  });

  it('ends the room on disconnect-bot, as a Pipecat bot leaves; the token in the URL stays out of the log', async () => {
    const bot = await startServer([GREETING], true);
    const { body } = await bot.start();
    const alice = await bot.join(body.ws_url!);
    await alice.until('bot-ready', () => alice.of('bot-ready').length === 1);
    alice.sendRtvi('disconnect-bot');
    expect(await alice.untilClosed()).toEqual({ code: 1000, reason: 'room closed: disconnect-bot' });
    const late = await bot.join(body.ws_url!);
    expect(await late.untilClosed()).toEqual({ code: 4404, reason: 'room not found or has closed' });
    expect(bot.stt.closed).toBe(1);
    const token = new URL(body.ws_url!).searchParams.get('token')!;
    const logged = JSON.stringify(server!.logs);
    expect(logged).toContain('token=[redacted]');
    expect(logged).not.toContain(token.slice(3, 20));
  });

  it('closes malformed clients with 1008 and a reason, refuses unsupported RTVI requests, and the room carries on', async () => {
    const bot = await startServer([GREETING, ANSWER]);
    const { body } = await bot.start();
    const alice = await bot.join(body.ws_url!);
    await alice.until('bot-ready', () => alice.of('bot-ready').length === 1);

    // A request the room does not serve gets the RTVI error reply with its id; the socket stays open.
    const id = alice.sendRtvi('send-text', { content: 'hello' });
    await alice.until('error-response', () => alice.of('error-response').length === 1);
    expect(alice.of('error-response')[0]).toEqual({
      label: 'rtvi-ai',
      type: 'error-response',
      id,
      data: { error: 'send-text is not supported by this server' },
    });

    const audio = (rateHz: number, channels: number, bytes: number) =>
      Frame.toBinary(
        Frame.create({
          frame: {
            oneofKind: 'audio',
            audio: { id: 0n, name: 'audio', audio: new Uint8Array(bytes), sampleRate: rateHz, numChannels: channels },
          },
        }),
      );
    const message = (data: string) =>
      Frame.toBinary(Frame.create({ frame: { oneofKind: 'message', message: { data } } }));
    const bad: Array<[Uint8Array | string, boolean, string]> = [
      [Buffer.from([0x0a, 0xff, 0xff]), false, 'malformed message: not a Pipecat protobuf frame (premature EOF)'],
      [Buffer.from([0x2a, 0x00]), false, 'malformed message: a Pipecat frame of no known kind'],
      [message('{not json'), false, 'malformed message: message frame data is not JSON'],
      [message('{"label":"other","type":"client-ready"}'), false, 'malformed message: label: label must be "rtvi-ai"'],
      [audio(16000, 1, 640), false, 'audio before client-ready'],
      [
        audio(11000, 1, 640),
        true,
        'malformed message: audio sample_rate 11000 is not one of 8000, 11025, 12000, 16000, 22050, 24000, 32000, 44100, 48000',
      ],
      [audio(16000, 3, 600), true, 'malformed message: audio num_channels 3 is not 1 or 2'],
      [audio(16000, 2, 642), true, 'malformed message: audio must be 16-bit PCM (whole samples for every channel)'],
      [
        Frame.toBinary(Frame.create({ frame: { oneofKind: 'text', text: { id: 0n, name: 'text', text: 'hi' } } })),
        true,
        'malformed message: text frames are not accepted; send RTVI messages in message frames',
      ],
      [
        '{"label":"rtvi-ai","type":"client-ready"}',
        true,
        'malformed message: a text message on a socket that speaks Pipecat protobuf frames',
      ],
    ];
    for (const [data, ready, reason] of bad) {
      const client = await bot.join(body.ws_url!, { ready });
      if (ready) await client.until('bot-ready', () => client.of('bot-ready').length === 1);
      client.sendRaw(data);
      expect(await client.untilClosed(), reason).toEqual({ code: 1008, reason });
    }

    // Alice is still in a working room: the bot hears her and answers.
    await alice.until('greeting', () => alice.of('bot-stopped-speaking').length >= 1);
    await alice.stream(fixturePcm('A06_birch_canoe.8k.wav', 16000), 16000);
    await alice.stream(new Int16Array(16000 * 1.2), 16000);
    await alice.until('the answer', () => alice.of('bot-transcription').some((m) => m.data!.text === ANSWER));
    expect(alice.closed).toBeUndefined();
  });
});
