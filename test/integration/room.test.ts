import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { startEmulatorServer } from '../../src/tools/emulators/emulator-server.js';
import { GeminiLiveEmulator } from '../../src/tools/emulators/gemini-live-emulator.js';
import { OpenAiRealtimeEmulator } from '../../src/tools/emulators/openai-realtime-emulator.js';
import { RoomTokens } from '../../src/rooms/room-tokens.js';
import { readMulawFile } from '../../src/tools/simulator/clip-file.js';
import { runPhoneCall } from '../../src/tools/simulator/phone-call.js';
import { startWebhookReceiver } from '../fakes/webhook-receiver.js';
import { ScriptedLlm, type ScriptedLlmOptions, ScriptedStt, ToneTts } from '../fakes/scripted-providers.js';
import { type CallServer, startCallServer } from '../helpers/call-server.js';
import { fixturePcm, RoomClient } from '../helpers/room-client.js';
import { TEST_KEY } from '../helpers/test-data.js';
import { type Clock, REAL_CLOCK, scaledClock } from '../../src/shared/clock.js';

/**
 * Rooms over real sockets: POST /v1/bots/start, then participants speaking the room protocol
 * (16 kHz PCM, as the web client sends) to a bot on the real room transport, Silero VAD,
 * turn-taking and Playout, with scripted STT, LLM and TTS.
 *
 * Server and participants share a clock (shared/clock.ts) SPEED times faster than wall time,
 * except where time is the subject: a barge-in's clear and heard point, the pause on a
 * backchannel, audio rates and clumps, and the speech-to-speech vendors cut off mid-greeting
 * (docs/testing.md).
 */
const SPEED = 3;
const FAST: Clock = scaledClock(SPEED);

const GREETING = 'Hello, this is the front desk.';
const ANSWER = 'Yes, the canoe is ready for you at the dock.';
const LONG_REPLY =
  'We have rooms with a view of the harbour, rooms with a garden terrace, and family suites with two bedrooms, ' +
  'and every stay includes breakfast, parking, and late checkout on Sundays if you ask at the desk.';
const HEARD = 'a birch canoe slid on the smooth planks';

let server: CallServer | undefined;
const clients: RoomClient[] = [];

afterEach(async () => {
  for (const client of clients.splice(0)) client.close();
  await server?.close();
  server = undefined;
});

interface Bot {
  stt: ScriptedStt;
  llm: ScriptedLlm;
  tts: ToneTts;
  /** The room's clock, server and participants. */
  clock: Clock;
  start(overrides?: Record<string, unknown>): Promise<{ name: string; token: string; wsUrl: string }>;
  join(
    token: string | undefined,
    wsUrl: string,
    options?: Parameters<typeof RoomClient.connect>[2],
  ): Promise<RoomClient>;
}

async function startServer(
  llm: ScriptedLlmOptions,
  env: Record<string, string> = {},
  heard = [HEARD, HEARD],
  /** FAST unless time is the test's subject. */
  clock: Clock = FAST,
): Promise<Bot> {
  const stt = new ScriptedStt(heard);
  const scriptedLlm = new ScriptedLlm(llm);
  const tts = new ToneTts();
  server = await startCallServer(
    (registry) => {
      registry
        .registerStt('scripted_stt', () => stt)
        .registerLlm('scripted_llm', () => scriptedLlm)
        .registerTts('tone_tts', () => tts);
    },
    env,
    { clock },
  );
  const s = server;
  return {
    stt,
    llm: scriptedLlm,
    tts,
    clock,
    async start(overrides = {}) {
      const res = await s.app.inject({
        method: 'POST',
        url: '/v1/bots/start',
        headers: { authorization: `Bearer ${TEST_KEY}` },
        payload: {
          bot_profile: 'voice_2024_10',
          services: { stt: 'scripted_stt', llm: 'scripted_llm', tts: 'tone_tts' },
          config: [
            { service: 'vad', options: [{ name: 'params', value: { stop_secs: 0.4 } }] },
            {
              service: 'llm',
              options: [
                {
                  name: 'initial_messages',
                  value: [{ role: 'system', content: 'You are the front desk of a small hotel.' }],
                },
                { name: 'run_on_config', value: true },
              ],
            },
          ],
          max_duration: 120,
          ...overrides,
        },
      });
      expect(res.statusCode, res.body).toBe(200);
      const { room_url, token } = res.json() as { room_url: string; token: string };
      const name = room_url.split('/rooms/')[1]!;
      return { name, token, wsUrl: `${s.baseUrl.replace(/^http/, 'ws')}/rooms/${name}/ws` };
    },
    async join(token, wsUrl, options) {
      const client = await RoomClient.connect(wsUrl, token, { clock, ...options });
      clients.push(client);
      return client;
    },
  };
}

describe('a bot in a room', () => {
  it('greets, hears the fixture speech sent as 16 kHz PCM, answers, and reports transcripts, speaking states and latency', async () => {
    const bot = await startServer({ replies: [GREETING, ANSWER] });
    const room = await bot.start();
    const alice = await bot.join(room.token, room.wsUrl);

    await alice.until('bot-ready', () => alice.of('bot-ready').length === 1);
    expect(alice.of('bot-ready')[0]!.data).toMatchObject({ profile: 'voice_2024_10', enableCam: false });
    await alice.until('the greeting', () => alice.of('bot-stopped-speaking').length >= 1);
    expect(
      alice
        .of('bot-transcription')
        .map((m) => m.data!.text)
        .join(' '),
    ).toBe(GREETING);
    expect(alice.of('bot-started-speaking')).toHaveLength(1);
    // 16 kHz PCM back: 32 bytes per ms; the tone is 40 ms per character of the greeting.
    const greetingAudioMs = alice.audioBytes / 32;
    expect(greetingAudioMs).toBeGreaterThan(GREETING.length * 40 * 0.9);

    const speech = fixturePcm('A06_birch_canoe.8k.wav', 16000);
    await alice.stream(alice.silence(300));
    await alice.stream(speech);
    await alice.stream(alice.silence(1200));
    await alice.until('the answer', () => alice.of('bot-stopped-speaking').length >= 2);

    expect(alice.of('user-started-speaking').length).toBeGreaterThanOrEqual(1);
    expect(alice.of('user-stopped-speaking').length).toBeGreaterThanOrEqual(1);
    expect(alice.of('user-transcription').find((m) => m.data!.final)?.data).toMatchObject({ text: HEARD, final: true });
    expect(alice.of('bot-transcription').at(-1)!.data!.text).toBe(ANSWER);
    const latency = alice.of('metrics')[0]!.data!.turnLatencyMs as number;
    // How long is the benchmark's business (bench/latency.ts); here, that it is measured.
    expect(latency).toBeGreaterThan(0);
    // The LLM got the heard words as the user's turn, after the greeting.
    expect(bot.llm.requests[1]!.messages.slice(-2)).toEqual([
      { role: 'assistant', content: GREETING },
      { role: 'user', content: HEARD },
    ]);
    // The STT heard the mixed room audio: 8 kHz mu-law, real time, since the first join.
    expect(bot.stt.bytesReceived).toBeGreaterThan(8 * 3000);
  });

  it('clears the bot when a participant talks over it, and keeps only what was heard in the context', async () => {
    const bot = await startServer({ replies: [LONG_REPLY, ANSWER] }, {}, undefined, REAL_CLOCK);
    const room = await bot.start();
    const alice = await bot.join(room.token, room.wsUrl);
    await alice.until('the bot talking', () => alice.audioBytes > 32 * 1500);

    await alice.stream(fixturePcm('A06_birch_canoe.8k.wav', 16000));
    await alice.until('the interruption', () => alice.of('bot-interrupted').length === 1);
    const audioAtClear = alice.audioBytes;
    await alice.stream(alice.silence(1200));
    await alice.until('the answer', () => alice.of('bot-transcription').some((m) => m.data!.text === ANSWER));

    const heard = bot.llm.requests[1]!.messages.find((m) => m.role === 'assistant')!.content;
    expect(heard.length).toBeGreaterThan(0);
    expect(heard.length).toBeLessThan(LONG_REPLY.length);
    // What reached the participant is about what the context says was heard (tone: 40 ms a character).
    expect(audioAtClear / 32).toBeLessThan(LONG_REPLY.length * 40 * 0.8);
  });

  it('lets two participants share the room: both hear the bot; a third is refused when the room holds two', async () => {
    const bot = await startServer({ replies: [GREETING] }, { SWITCHBOARD_ROOM_MAX_PARTICIPANTS: '2' });
    const room = await bot.start();
    const alice = await bot.join(room.token, room.wsUrl);
    const bob = await bot.join(room.token, room.wsUrl, { rateHz: 48000 });
    const carol = await bot.join(room.token, room.wsUrl);
    expect(await carol.untilClosed()).toEqual({ code: 4409, reason: 'room is full (2 participants)' });
    await alice.until('greeting', () => alice.of('bot-stopped-speaking').length === 1);
    await bob.until('greeting', () => bob.of('bot-stopped-speaking').length === 1);
    // Same greeting at 16 and 48 kHz: three times the bytes.
    expect(bob.audioBytes / alice.audioBytes).toBeGreaterThan(2.7);
    expect(bob.audioBytes / alice.audioBytes).toBeLessThan(3.3);
  });

  it('refuses bad, expired and other rooms’ tokens with clear close codes', async () => {
    const bot = await startServer({ replies: [GREETING] });
    const room = await bot.start();
    const other = await bot.start();
    const tokens = RoomTokens.forDataDir(server!.dataDir);

    const cases: Array<[string | undefined, number, string]> = [
      [undefined, 4401, 'missing or malformed room token'],
      ['v1.abc', 4401, 'missing or malformed room token'],
      [`${room.token.slice(0, -4)}AAAA`, 4401, 'room token signature is not valid'],
      [tokens.issue(room.name, Math.floor(Date.now() / 1000) - 1), 4401, 'room token has expired'],
      [other.token, 4403, 'room token is for another room'],
    ];
    for (const [token, code, reason] of cases) {
      const client = await bot.join(token, room.wsUrl, { ready: false });
      expect(await client.untilClosed(), String(token)).toEqual({ code, reason });
    }
    const ghost = await bot.join(
      tokens.issue('no-such-room', Math.floor(Date.now() / 1000) + 60),
      room.wsUrl.replace(room.name, 'no-such-room'),
      { ready: false },
    );
    expect(await ghost.untilClosed()).toEqual({ code: 4404, reason: 'room not found or has closed' });
    // The token also works as ?token= for clients that cannot set subprotocols.
    const viaQuery = await bot.join(room.token, room.wsUrl, { viaQuery: true });
    await viaQuery.until('bot-ready', () => viaQuery.of('bot-ready').length === 1);
  });

  it('closes malformed and flooding clients with a reason, and the room carries on for the others', async () => {
    const bot = await startServer({ replies: [GREETING, ANSWER] }, {}, undefined, REAL_CLOCK);
    const room = await bot.start();
    const alice = await bot.join(room.token, room.wsUrl);
    await alice.until('bot-ready', () => alice.of('bot-ready').length === 1);

    const bad: Array<[(c: RoomClient) => void, boolean, number, string]> = [
      [(c) => c.sendRaw('not json'), true, 1008, 'malformed message: not JSON'],
      [
        (c) => c.sendJson({ label: 'other', type: 'client-ready', data: { audio: { sampleRateHz: 16000 } } }),
        false,
        1008,
        'malformed message: label: label must be "rtvi-ai"',
      ],
      [
        (c) => c.sendJson({ label: 'rtvi-ai', type: 'client-ready', data: { audio: { sampleRateHz: 11025 } } }),
        false,
        1008,
        'malformed message: data.audio.sampleRateHz: sampleRateHz must be one of 8000, 16000, 24000, 44100, 48000',
      ],
      [(c) => c.sendRaw(Buffer.alloc(640)), false, 1008, 'audio before client-ready'],
      [
        (c) => c.sendRaw(Buffer.alloc(641)),
        true,
        1008,
        'malformed message: audio must be 16-bit PCM (an even number of bytes)',
      ],
      [
        (c) => c.sendJson({ label: 'rtvi-ai', type: 'client-ready', data: { audio: { sampleRateHz: 16000 } } }),
        true,
        1008,
        'client-ready sent twice',
      ],
      // Twelve seconds of audio within a moment (past the 10 s burst), in messages under the size limit.
      [
        (c) => {
          for (let i = 0; i < 24; i++) c.sendRaw(Buffer.alloc(16000));
        },
        true,
        4429,
        'audio faster than real time',
      ],
      // 600 ms of audio in one message (the limit is 500 ms).
      [(c) => c.sendRaw(Buffer.alloc(19_200)), true, 1009, 'audio message over 500 ms'],
      [(c) => c.sendRaw(Buffer.alloc(70 * 1024)), true, 1009, ''],
    ];
    for (const [misbehave, ready, code, reason] of bad) {
      const client = await bot.join(room.token, room.wsUrl, { ready });
      if (ready) await client.until('bot-ready', () => client.of('bot-ready').length === 1);
      misbehave(client);
      expect(await client.untilClosed(), reason).toEqual({ code, reason });
    }
    const flooder = await bot.join(room.token, room.wsUrl);
    for (let i = 0; i < 400; i++) flooder.sendRaw(Buffer.alloc(2));
    expect((await flooder.untilClosed()).code).toBe(4429);

    // Alice is still in a working room: the bot hears her and answers.
    await alice.until('greeting', () => alice.of('bot-stopped-speaking').length >= 1);
    await alice.stream(fixturePcm('A06_birch_canoe.8k.wav', 16000));
    await alice.stream(alice.silence(1200));
    await alice.until('the answer', () => alice.of('bot-transcription').some((m) => m.data!.text === ANSWER));
    expect(alice.closed).toBeUndefined();
  });

  it('hears and answers a participant whose audio arrives in real time but in clumps (300 ms at a time, once after a 1.2 s stall)', async () => {
    const bot = await startServer({ replies: [GREETING, ANSWER] }, {}, undefined, REAL_CLOCK);
    const room = await bot.start();
    const alice = await bot.join(room.token, room.wsUrl);
    await alice.until('greeting', () => alice.of('bot-stopped-speaking').length >= 1);
    const speech = fixturePcm('A06_birch_canoe.8k.wav', 16000);
    const pcm = new Int16Array(speech.length + alice.silence(1500).length);
    pcm.set(speech);
    // Every 20 ms frame goes out once wall time says it is due, but only every 300 ms, and once
    // after a 1.2 s stall: as a congested network delivers a microphone's audio.
    const frame = alice.rateHz / 50;
    const frames = Math.ceil(pcm.length / frame);
    const startMs = performance.now();
    for (let clump = 0, sent = 0; sent < frames && !alice.closed; clump++) {
      await new Promise((resolve) => setTimeout(resolve, clump === 2 ? 1200 : 300));
      const due = Math.min(frames, Math.floor((performance.now() - startMs) / 20));
      for (; sent < due; sent++) {
        const chunk = pcm.subarray(sent * frame, (sent + 1) * frame);
        alice.sendRaw(Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength));
      }
    }
    await alice.until('the answer', () => alice.of('bot-transcription').some((m) => m.data!.text === ANSWER));
    expect(alice.closed).toBeUndefined();
  });

  it('closes the room when everyone has left, and then refuses the token', async () => {
    const bot = await startServer({ replies: [GREETING] }, { SWITCHBOARD_ROOM_EMPTY_GRACE_SECS: '0' });
    const room = await bot.start();
    const alice = await bot.join(room.token, room.wsUrl);
    await alice.until('bot-ready', () => alice.of('bot-ready').length === 1);
    alice.sendJson({ label: 'rtvi-ai', type: 'disconnect-bot' });
    expect(await alice.untilClosed()).toEqual({ code: 1000, reason: 'participant left' });
    // The room closes just after the last one left; its page says so once it has.
    const page = () => fetch(`${server!.baseUrl}/rooms/${room.name}`);
    await expect.poll(async () => (await page()).status, { timeout: 10_000 }).toBe(404);
    expect(await (await page()).text()).toContain('This room does not exist or has ended.');
    const late = await bot.join(room.token, room.wsUrl);
    expect(await late.untilClosed()).toEqual({ code: 4404, reason: 'room not found or has closed' });
    await expect.poll(() => bot.stt.closed, { timeout: 10_000 }).toBe(1);
    await expect.poll(() => bot.tts.closes, { timeout: 10_000 }).toBe(1);
  });

  it('natural_conversation: "mm-hmm" while the bot talks neither cuts it off nor starts a reply (it may pause it, then the reply resumes)', async () => {
    const bot = await startServer({ replies: [LONG_REPLY, ANSWER] }, {}, ['mm-hmm', HEARD], REAL_CLOCK);
    const room = await bot.start({ bot_profile: 'natural_conversation_2024_11' });
    const alice = await bot.join(room.token, room.wsUrl);
    await alice.until('the bot talking', () => alice.audioBytes > 32 * 1000);
    // Real speech goes in; the scripted STT "hears" an acknowledgement.
    await alice.stream(fixturePcm('A06_birch_canoe.8k.wav', 16000));
    await alice.stream(alice.silence(1000));
    expect(bot.stt.finalizeCalls).toBe(1);
    await alice.until('the whole reply', () => alice.of('bot-stopped-speaking').length === 1, 20_000);
    // Interruption mode instant stops the bot at the first syllable (the page is told to drop what it
    // holds: bot-interrupted), then the words show a backchannel and the reply plays on, whole.
    expect(alice.of('bot-interrupted').length).toBeLessThanOrEqual(1);
    expect(bot.llm.requests).toHaveLength(1);
    expect(alice.audioBytes / 32).toBeGreaterThan(LONG_REPLY.length * 40 * 0.9);

    // A real answer afterwards is a turn as usual.
    await alice.stream(fixturePcm('A06_birch_canoe.8k.wav', 16000));
    await alice.stream(alice.silence(1500));
    await alice.until('the answer', () => alice.of('bot-transcription').some((m) => m.data!.text === ANSWER));
    expect(bot.llm.requests[1]!.messages.at(-1)).toEqual({ role: 'user', content: HEARD });
  });

  it('vision: bot-ready asks for the camera, and the latest frame goes to the LLM with the user turn', async () => {
    const bot = await startServer({ replies: [GREETING, ANSWER] });
    const room = await bot.start({ bot_profile: 'vision_2024_08' });
    const alice = await bot.join(room.token, room.wsUrl);
    await alice.until('bot-ready', () => alice.of('bot-ready').length === 1);
    expect(alice.of('bot-ready')[0]!.data).toMatchObject({ profile: 'vision_2024_08', enableCam: true });
    const frame = (n: number) => Buffer.from(`\xff\xd8\xff\xe0 frame ${n} of the camera`, 'latin1').toString('base64');
    alice.sendJson({ label: 'rtvi-ai', type: 'user-image', data: { imageBase64: frame(1) } });
    alice.sendJson({ label: 'rtvi-ai', type: 'user-image', data: { imageBase64: frame(2) } });
    await alice.until('greeting', () => alice.of('bot-stopped-speaking').length === 1);
    await alice.stream(fixturePcm('A06_birch_canoe.8k.wav', 16000));
    await alice.stream(alice.silence(1200));
    await alice.until('the answer', () => alice.of('bot-transcription').some((m) => m.data!.text === ANSWER));
    expect(bot.llm.requests[1]!.messages.at(-1)).toEqual({ role: 'user', content: HEARD, imageBase64: frame(2) });
    // Frames are checked like any message: a frame that is not base64 closes the sender.
    alice.sendJson({ label: 'rtvi-ai', type: 'user-image', data: { imageBase64: 'not an image at all!' } });
    expect((await alice.untilClosed()).reason).toBe(
      'malformed message: data.imageBase64: imageBase64 must be a base64 JPEG, PNG or WebP',
    );
  });

  it('puts a waiting dial-in caller in the room: the caller hears the bot, and the bot hears the caller', async () => {
    const bot = await startServer({ replies: [GREETING, ANSWER] }, { SWITCHBOARD_DIALIN_HOLD_TIMEOUT_SECS: '30' });
    const secret = Buffer.alloc(32, 7).toString('base64');
    const number = '+14155550188';
    const receiver = await startWebhookReceiver(() => secret);
    try {
      const api = (url: string, payload: unknown) =>
        server!.app.inject({
          method: 'POST',
          url,
          headers: { authorization: `Bearer ${TEST_KEY}` },
          payload: payload as object,
        });
      expect((await api('/v1/buy-phone-number', { number })).statusCode).toBe(200);
      expect(
        (
          await api('/v1/', {
            properties: { pinless_dialin: [{ phone_number: number, room_creation_api: receiver.url, hmac: secret }] },
          })
        ).statusCode,
      ).toBe(200);

      const birch = {
        mulaw: await readMulawFile(
          fileURLToPath(new URL('../../fixtures/audio/A06_birch_canoe.ulaw', import.meta.url)),
        ),
      };
      const call = runPhoneCall({
        target: { webhookUrl: `${server!.baseUrl}/twilio/voice` },
        clock: bot.clock,
        from: '+15005550006',
        to: number,
        clips: { birch },
        scenario: {
          steps: [
            { do: 'wait', ms: 4000 },
            { do: 'play', clip: 'birch' },
            { do: 'wait', ms: 2500 },
          ],
          endOfScript: 'hangup',
          maxDurationMs: 20_000,
        },
      });
      // The customer's server gets the webhook and starts the bot with the call's identifiers.
      const deadline = Date.now() + 5000;
      while (!receiver.received.some((r) => r.body.callId !== undefined) && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 50));
      const webhook = receiver.received.find((r) => r.body.callId !== undefined)!.body;
      const started = await bot.start({
        dialin_settings: { call_id: webhook.callId, call_domain: webhook.callDomain },
      });
      // A browser joins the same room and sees what the caller says.
      const alice = await bot.join(started.token, started.wsUrl);
      const report = await call;
      expect(report.outcome).toBe('completed');
      await alice.until('the answer', () => alice.of('bot-transcription').some((m) => m.data!.text === ANSWER));
      expect(alice.of('user-transcription').some((m) => m.data!.text === HEARD)).toBe(true);
      expect(bot.llm.requests[1]!.messages.at(-1)).toEqual({ role: 'user', content: HEARD });
      // The caller heard the hold chime, then the bot's greeting and answer.
      expect(report.metrics.bot.receivedAudioMs).toBeGreaterThan((GREETING.length + ANSWER.length) * 40 * 0.5);
      // The room lives on with the browser in it after the caller hangs up.
      expect(alice.closed).toBeUndefined();
    } finally {
      await receiver.close();
    }
  });

  it('says goodbye at max_duration and closes the room for everyone', async () => {
    const bot = await startServer({ replies: [GREETING] });
    const room = await bot.start({ max_duration: 2 });
    const alice = await bot.join(room.token, room.wsUrl);
    const closed = await alice.untilClosed(15_000);
    expect(closed).toEqual({ code: 1000, reason: 'room closed: max_duration' });
    expect(alice.of('bot-transcription').map((m) => m.data!.text)).toContain(
      'We have reached the time limit for this call. Thank you for calling, goodbye!',
    );
  });

  it('end_call in a room: the bot finishes its goodbye, then the room closes for everyone', async () => {
    const bot = await startServer({
      replies: [
        GREETING,
        { text: 'Then we are done here, goodbye!', calls: [{ name: 'end_call', arguments: {}, id: 'call_end' }] },
        '',
      ],
    });
    const room = await bot.start({
      config: [
        { service: 'vad', options: [{ name: 'params', value: { stop_secs: 0.4 } }] },
        {
          service: 'llm',
          options: [
            { name: 'initial_messages', value: [{ role: 'system', content: 'You are the front desk.' }] },
            { name: 'run_on_config', value: true },
            { name: 'tools', value: ['end_call'] },
          ],
        },
      ],
    });
    const alice = await bot.join(room.token, room.wsUrl);
    const bob = await bot.join(room.token, room.wsUrl);
    await alice.until('the greeting', () => alice.of('bot-stopped-speaking').length >= 1);
    await alice.stream(alice.silence(300));
    await alice.stream(fixturePcm('A06_birch_canoe.8k.wav', 16000));
    await alice.stream(alice.silence(1200));
    const [closedA, closedB] = await Promise.all([alice.untilClosed(20_000), bob.untilClosed(20_000)]);
    expect(closedA).toEqual({ code: 1000, reason: 'room closed: end_call' });
    expect(closedB).toEqual(closedA);
    expect(alice.of('bot-transcription').map((m) => m.data!.text)).toContain('Then we are done here, goodbye!');
    // The result reached the model before the call ended: its second pass saw it.
    expect(bot.llm.requests[2]!.messages.find((m) => m.role === 'tool')).toMatchObject({ toolCallId: 'call_end' });
  });

  it('speech-to-speech in a room: OpenAI Realtime greets, answers the participant, and is cut off when talked over', async () => {
    const realtime = new OpenAiRealtimeEmulator({
      latencies: { llmFirstTokenMs: 80, ttsFirstByteMs: 40, ttsRealTimeFactor: 1 },
      replies: [LONG_REPLY, ANSWER],
      transcripts: [HEARD],
    });
    const vendors = await startEmulatorServer([realtime]);
    try {
      const bot = await startServer({ replies: [] }, { SWITCHBOARD_OPENAI_URL: vendors.url }, undefined, REAL_CLOCK);
      const room = await bot.start({
        bot_profile: 'openai_realtime_beta_2024_10',
        services: { llm: 'openai_realtime' },
        api_keys: { openai: 'sk-test-0123456789' },
        config: [{ service: 'llm', options: [{ name: 'run_on_config', value: true }] }],
      });
      const alice = await bot.join(room.token, room.wsUrl);
      await alice.until('the greeting', () => alice.audioBytes > 32 * 1200);
      expect(alice.of('bot-started-speaking')).toHaveLength(1);

      // Talk over the greeting: the vendor hears speech, the room clears, the item is truncated.
      await alice.stream(fixturePcm('A06_birch_canoe.8k.wav', 16000));
      await alice.until(
        'the interruption',
        () => alice.of('bot-interrupted').length === 1 || alice.of('bot-stopped-speaking').length >= 1,
      );
      await alice.stream(alice.silence(1200));
      await alice.until('the answer', () => alice.of('bot-transcription').some((m) => m.data!.text === ANSWER), 15_000);

      const connection = realtime.connections[0]!;
      expect(connection.responses[0]!.status).toBe('cancelled');
      expect(connection.truncations).toHaveLength(1);
      expect(connection.truncations[0]!.accepted).toBe(true);
      expect(alice.of('user-transcription').some((m) => m.data!.text === HEARD)).toBe(true);
    } finally {
      await vendors.close();
    }
  });

  it('records a room with recording_settings: caller and bot tracks on one timeline, listed under the room name', async () => {
    // The room closes (and its recording finishes) a second after the last participant leaves.
    const bot = await startServer({ replies: [GREETING, ANSWER] }, { SWITCHBOARD_ROOM_EMPTY_GRACE_SECS: '1' });
    const room = await bot.start({ recording_settings: { type: 'cloud' } });
    const alice = await bot.join(room.token, room.wsUrl);
    await alice.until('the greeting', () => alice.of('bot-stopped-speaking').length >= 1);
    await alice.stream(fixturePcm('A06_birch_canoe.8k.wav', 16000));
    await alice.stream(alice.silence(1200));
    await alice.until('the answer', () => alice.of('bot-stopped-speaking').length >= 2);
    alice.close();

    const list = async () =>
      (
        await server!.app.inject({
          method: 'GET',
          url: '/v1/recordings',
          headers: { authorization: `Bearer ${TEST_KEY}` },
        })
      ).json() as {
        total_count: number;
        data: Array<{ room_name: string; status: string; duration: number; tracks: Array<{ duration_ms?: number }> }>;
      };
    const deadline = Date.now() + 20_000;
    let recordings = await list();
    while (recordings.data[0]?.status !== 'finished' && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 200));
      recordings = await list();
    }
    expect(recordings.total_count).toBe(1);
    const [recording] = recordings.data;
    expect(recording!.room_name).toBe(room.name);
    expect(recording!.status).toBe('finished');
    expect(recording!.duration).toBeGreaterThanOrEqual(4);
    expect(recording!.tracks).toHaveLength(2);
  });

  it('speech-to-speech in a room: Gemini Live greets, is interrupted cleanly, and answers', async () => {
    const live = new GeminiLiveEmulator({
      latencies: { llmFirstTokenMs: 80, ttsFirstByteMs: 40, ttsRealTimeFactor: 1 },
      replies: [LONG_REPLY, ANSWER],
      transcripts: [HEARD],
    });
    const vendors = await startEmulatorServer([live]);
    try {
      const bot = await startServer({ replies: [] }, { SWITCHBOARD_GEMINI_URL: vendors.url }, undefined, REAL_CLOCK);
      const room = await bot.start({
        bot_profile: 'gemini_multimodal_live_2024_12',
        services: { llm: 'gemini' },
        api_keys: { gemini: 'g-test-key-0123456789' },
        config: [{ service: 'llm', options: [{ name: 'run_on_config', value: true }] }],
      });
      const alice = await bot.join(room.token, room.wsUrl);
      await alice.until('the greeting', () => alice.audioBytes > 32 * 1200);
      await alice.stream(fixturePcm('A06_birch_canoe.8k.wav', 16000));
      await alice.until(
        'the interruption',
        () => alice.of('bot-interrupted').length === 1 || alice.of('bot-stopped-speaking').length >= 1,
      );
      await alice.stream(alice.silence(1200));
      await alice.until(
        'the answer',
        () => live.connections[0]!.modelTurns.length >= 2 && alice.of('bot-started-speaking').length >= 2,
        15_000,
      );

      const connection = live.connections[0]!;
      expect(connection.interruptions).toBe(1);
      expect(connection.modelTurns[0]!.status).toBe('interrupted');
      expect(connection.audioMimeTypes).toEqual(['audio/pcm;rate=16000']);
      expect(alice.of('user-transcription').some((m) => m.data!.text === HEARD)).toBe(true);
    } finally {
      await vendors.close();
    }
  });
});
