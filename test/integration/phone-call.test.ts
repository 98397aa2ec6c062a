import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { readMulawFile, sliceMulaw } from '../../src/tools/simulator/clip-file.js';
import type { CallReport } from '../../src/tools/simulator/call-report.js';
import type { CallerClip } from '../../src/tools/simulator/caller-clip.js';
import { runPhoneCall } from '../../src/tools/simulator/phone-call.js';
import { PHRASES } from '../../src/pipeline/call-deps.js';
import { MULAW_FRAME_BYTES, MULAW_SILENCE_BYTE } from '../../src/audio/frames.js';
import { CarrierMessages } from '../../src/tools/simulator/carrier-messages.js';
import { CLOSE } from '../../src/shared/close-codes.js';
import { type Clock, REAL_CLOCK, scaledClock } from '../../src/shared/clock.js';
import { ScriptedLlm, type ScriptedLlmOptions, ScriptedStt, ToneTts } from '../fakes/scripted-providers.js';
import { type CallServer, startCallServer } from '../helpers/call-server.js';

/**
 * Whole phone calls over real sockets: the simulator plays recorded speech the way Twilio does,
 * the server runs the real transport, Silero VAD, turn-taking and Playout; only the STT, LLM and
 * TTS are scripted so each test can say what the bot "heard" and answers.
 *
 * Server and simulator share a clock (shared/clock.ts) running SPEED times faster than wall time,
 * except where time is the subject: the barge-in's heard point, and the carrier sockets whose
 * audio rate or message flood the server judges (docs/testing.md).
 */
const SPEED = 3;
const FAST: Clock = scaledClock(SPEED);

const fixture = (name: string) => fileURLToPath(new URL(`../../fixtures/audio/${name}`, import.meta.url));

async function clip(name: string, voiced?: CallerClip['voiced']): Promise<CallerClip> {
  const mulaw = await readMulawFile(fixture(name));
  return voiced === undefined ? { mulaw } : { mulaw, voiced };
}

const SYSTEM = 'You are the front desk of a small hotel.';
const LONG_REPLY =
  'We have rooms with a view of the harbour, rooms with a garden terrace, and family suites with two bedrooms, ' +
  'and every stay includes breakfast, parking, and late checkout on Sundays if you ask at the desk.';

interface Bot {
  server: CallServer;
  stt: ScriptedStt;
  llm: ScriptedLlm;
  tts: ToneTts;
  wssUrl: string;
  /** The calls' clock, server and simulator. */
  clock: Clock;
}

let server: CallServer | undefined;

afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function startBot(options: {
  heard?: string[];
  llm: ScriptedLlmOptions;
  tts?: ToneTts;
  runOnConfig?: boolean;
  maxDurationSecs?: number;
  /** FAST unless time is the test's subject. */
  clock?: Clock;
}): Promise<Bot> {
  const clock = options.clock ?? FAST;
  const stt = new ScriptedStt(options.heard ?? []);
  const llm = new ScriptedLlm(options.llm);
  const tts = options.tts ?? new ToneTts();
  server = await startCallServer(
    (registry) => {
      registry
        .registerStt('scripted_stt', () => stt)
        .registerLlm('scripted_llm', () => llm)
        .registerTts('tone_tts', () => tts);
    },
    {},
    { clock },
  );
  const { wssUrl } = await server.createConfig({
    services: { stt: 'scripted_stt', llm: 'scripted_llm', tts: 'tone_tts' },
    config: [
      {
        service: 'llm',
        options: [
          { name: 'initial_messages', value: [{ role: 'system', content: SYSTEM }] },
          { name: 'run_on_config', value: options.runOnConfig ?? false },
        ],
      },
    ],
    max_duration: options.maxDurationSecs ?? 600,
  });
  return { server, stt, llm, tts, wssUrl, clock };
}

function kinds(report: CallReport, kind: string) {
  return report.timeline.filter((e) => e.kind === kind);
}

/** The run passes only if the server kept to the Media Streams protocol throughout. */
function expectCleanProtocol(report: CallReport): void {
  expect(report.metrics.violations.byKind).toEqual({});
  expect(report.metrics.violations.total).toBe(0);
}

describe('a phone call to a configured bot', () => {
  it('greets first when run_on_config is set, then answers what the caller said', async () => {
    const bot = await startBot({
      heard: ['the birch canoe slid on the smooth planks'],
      llm: { replies: ['Welcome to the Harbour Hotel, how can I help?', 'That sounds like a lovely trip.'] },
      runOnConfig: true,
    });
    const report = await runPhoneCall({
      target: { wssUrl: bot.wssUrl },
      clock: bot.clock,
      clips: { birch: await clip('A06_birch_canoe.ulaw') },
      scenario: {
        steps: [
          { do: 'wait-bot-silence', ms: 600 },
          { do: 'play', clip: 'birch' },
          { do: 'wait-bot-silence', ms: 600 },
        ],
      },
    });

    expect(report.outcome).toBe('completed');
    expectCleanProtocol(report);
    // The greeting comes from initial_messages alone, before the caller says anything.
    expect(bot.llm.requests[0]!.messages).toEqual([{ role: 'system', content: SYSTEM }]);
    expect(report.metrics.firstBotAudioMs).not.toBeNull();
    expect(report.metrics.firstBotAudioMs!).toBeLessThan(report.metrics.utterances[0]!.startMs);

    // The caller's turn reached the model with the greeting in context, and the bot answered it.
    expect(bot.llm.requests).toHaveLength(2);
    expect(bot.llm.requests[1]!.messages).toEqual([
      { role: 'system', content: SYSTEM },
      { role: 'assistant', content: 'Welcome to the Harbour Hotel, how can I help?' },
      { role: 'user', content: 'the birch canoe slid on the smooth planks' },
    ]);
    const [utterance] = report.metrics.utterances;
    expect(utterance!.bargeIn).toBe(false);
    expect(utterance!.replyLatencyMs).not.toBeNull();
    expect(report.metrics.bot.segments).toBe(2);
    // Every mark the bot sent came back, so Playout knew exactly what was heard.
    expect(report.metrics.marks.echoed).toBe(report.metrics.marks.received);
    expect(bot.stt.bytesReceived).toBeGreaterThan(0);
    expect(bot.stt.finalizeCalls).toBe(1);
  });

  it('stops talking when the caller barges in: clear at once, no stale audio, the model remembers only what was heard', async () => {
    const bot = await startBot({
      heard: ['do you have rooms', 'go forward ten meters'],
      llm: { replies: [LONG_REPLY, 'Of course.'] },
      // The heard point and the clear are measured in real time.
      clock: REAL_CLOCK,
    });
    const report = await runPhoneCall({
      target: { wssUrl: bot.wssUrl },
      clock: bot.clock,
      clips: { birch: await clip('A06_birch_canoe.ulaw'), forward: await clip('A07_go_forward.ulaw') },
      scenario: {
        steps: [
          { do: 'play', clip: 'birch' },
          // Interrupt two seconds into the long answer.
          { do: 'wait-bot-audio', thenMs: 2000 },
          { do: 'play', clip: 'forward' },
          { do: 'wait-bot-silence', ms: 600 },
        ],
      },
    });

    expect(report.outcome).toBe('completed');
    expectCleanProtocol(report);
    const [question, interruption] = report.metrics.utterances;
    expect(question!.replyLatencyMs).not.toBeNull();
    expect(interruption!.bargeIn).toBe(true);
    expect(interruption!.bargeInLatencyMs).not.toBeNull();

    // One clear, and nothing of the cancelled reply arrived after it.
    expect(kinds(report, 'clear-received')).toHaveLength(1);
    expect(report.metrics.clears).toHaveLength(1);
    expect(report.metrics.clears[0]!.lateAudioMs).toBe(0);
    expect(bot.llm.requests).toHaveLength(2);

    // The reply in context is cut to roughly the two seconds the caller heard: a strict prefix of
    // what the model wrote, not the whole answer and not nothing.
    const context = bot.llm.requests[1]!.messages;
    expect(context.at(-1)).toEqual({ role: 'user', content: 'go forward ten meters' });
    const assistant = context.at(-2)!;
    expect(assistant.role).toBe('assistant');
    const heardWords = assistant.content.replace(/…$/, '').split(/\s+/);
    const allWords = LONG_REPLY.split(/\s+/);
    expect(heardWords.length).toBeGreaterThan(0);
    expect(heardWords.length).toBeLessThan(allWords.length);
    expect(allWords.slice(0, heardWords.length)).toEqual(heardWords);
    // And the bot answered the interruption.
    expect(interruption!.replyLatencyMs).not.toBeNull();
  });

  it('keeps talking through background noise (running water and dishes) during its reply', async () => {
    const bot = await startBot({ llm: { replies: [LONG_REPLY] }, runOnConfig: true });
    const report = await runPhoneCall({
      target: { wssUrl: bot.wssUrl },
      clock: bot.clock,
      // Four seconds of the clip, well inside the reply; it has no speech, and `voiced: null` says so.
      clips: { dishes: { mulaw: sliceMulaw((await clip('A10_noise_dishes.ulaw')).mulaw, 0, 4000), voiced: null } },
      scenario: {
        steps: [
          { do: 'wait-bot-audio', thenMs: 300 },
          { do: 'play', clip: 'dishes' },
          { do: 'wait-bot-silence', ms: 600 },
        ],
      },
    });

    expect(report.outcome).toBe('completed');
    expectCleanProtocol(report);
    expect(kinds(report, 'clear-received')).toHaveLength(0);
    expect(bot.llm.requests).toHaveLength(1);
    expect(bot.tts.cancelled).toBe(0);
    // The whole greeting played as one segment.
    expect(report.metrics.bot.segments).toBe(1);
  });

  it('ends the call at max_duration: the goodbye plays, then the stream closes normally', async () => {
    const bot = await startBot({ llm: { replies: ['unused'] }, maxDurationSecs: 2 });
    const report = await runPhoneCall({
      target: { wssUrl: bot.wssUrl },
      clock: bot.clock,
      scenario: { steps: [], endOfScript: 'stay', maxDurationMs: 30_000 },
    });

    expect(report.outcome).toBe('server-closed');
    expect(report.close).toMatchObject({ code: CLOSE.normal, by: 'server' });
    expectCleanProtocol(report);
    expect(bot.tts.pieces.join(' ')).toBe(PHRASES.goodbye);
    // The goodbye started at the limit and played in full before the close.
    const firstAudio = report.metrics.firstBotAudioMs!;
    expect(firstAudio).toBeGreaterThanOrEqual(2000);
    const audioEnd = kinds(report, 'bot-audio-end').at(-1)!.atMs;
    expect(report.durationMs).toBeGreaterThanOrEqual(audioEnd);
    expect(report.metrics.bot.playedAudioMs).toBeGreaterThan(PHRASES.goodbye.length * 40 * 0.9);
    expect(bot.llm.requests).toHaveLength(0);
  });

  it('passes key presses to the model as one DTMF turn, ended by #', async () => {
    const bot = await startBot({ llm: { replies: ['Connecting you to room 42.'] } });
    const report = await runPhoneCall({
      target: { wssUrl: bot.wssUrl },
      clock: bot.clock,
      scenario: {
        steps: [
          { do: 'wait', ms: 500 },
          { do: 'dtmf', digits: '42#' },
          { do: 'wait-bot-silence', ms: 600 },
        ],
      },
    });

    expect(report.outcome).toBe('completed');
    expectCleanProtocol(report);
    expect(bot.llm.requests).toHaveLength(1);
    expect(bot.llm.requests[0]!.messages.at(-1)).toEqual({ role: 'user', content: 'DTMF: 42#' });
    expect(report.metrics.bot.segments).toBe(1);
  });

  it('apologises when the model fails mid-reply, and the call goes on', async () => {
    const bot = await startBot({
      heard: ['the birch canoe slid on the smooth planks', 'go forward ten meters'],
      llm: {
        replies: ['Let me think about that for a second.', 'Going forward.'],
        failOnRequest: { request: 1, afterTokens: 3 },
      },
    });
    const report = await runPhoneCall({
      target: { wssUrl: bot.wssUrl },
      clock: bot.clock,
      clips: { birch: await clip('A06_birch_canoe.ulaw'), forward: await clip('A07_go_forward.ulaw') },
      scenario: {
        steps: [
          { do: 'play', clip: 'birch' },
          { do: 'wait-bot-silence', ms: 600 },
          { do: 'play', clip: 'forward' },
          { do: 'wait-bot-silence', ms: 600 },
        ],
      },
    });

    expect(report.outcome).toBe('completed');
    expectCleanProtocol(report);
    expect(bot.tts.pieces).toContain(PHRASES.llmFailed);
    expect(bot.llm.requests).toHaveLength(2);
    expect(bot.llm.requests[1]!.messages.at(-1)).toEqual({ role: 'user', content: 'go forward ten meters' });
    expect(report.metrics.utterances.map((u) => u.replyLatencyMs !== null)).toEqual([true, true]);
  });
});

describe('provider failures inside a call', () => {
  const birchTurn = async (bot: Bot) =>
    runPhoneCall({
      target: { wssUrl: bot.wssUrl },
      clock: bot.clock,
      clips: { birch: await clip('A06_birch_canoe.ulaw') },
      scenario: {
        steps: [
          { do: 'play', clip: 'birch' },
          { do: 'wait-bot-silence', ms: 600 },
        ],
        endOfScript: 'hangup',
      },
    });

  it('retries a model that fails before its first word, and the caller hears the answer, not an apology', async () => {
    const bot = await startBot({
      heard: ['the birch canoe slid on the smooth planks'],
      llm: { replies: ['A fine canoe it is.'], failOnRequest: { request: 1, afterTokens: 0 } },
    });
    const report = await birchTurn(bot);
    expect(report.outcome).toBe('completed');
    expect(bot.llm.requests).toHaveLength(2);
    expect(bot.llm.requests[1]!.messages).toEqual(bot.llm.requests[0]!.messages);
    expect(bot.tts.pieces).toEqual(['A fine canoe it is.']);
    expect(report.metrics.utterances[0]!.replyLatencyMs).not.toBeNull();
  });

  it('retries a voice that drops before any audio, replaying the text it had already taken', async () => {
    const bot = await startBot({
      heard: ['the birch canoe slid on the smooth planks'],
      llm: { replies: ['A fine canoe it is. Shall I book one?'] },
      tts: new ToneTts(40, 20, undefined, 1),
    });
    const report = await birchTurn(bot);
    expect(report.outcome).toBe('completed');
    expect(bot.tts.syntheses).toBe(2);
    // The second attempt got the whole reply, from its first sentence.
    expect(bot.tts.pieces).toEqual(['A fine canoe it is.', 'Shall I book one?']);
    expect(bot.llm.requests).toHaveLength(1);
  });

  it('ends the call politely when a provider refuses the request (a bad key): apology, then close', async () => {
    const bot = await startBot({
      heard: ['the birch canoe slid on the smooth planks'],
      llm: { replies: ['never said'], failOnRequest: { request: 1, afterTokens: 0, retryable: false } },
    });
    const report = await runPhoneCall({
      target: { wssUrl: bot.wssUrl },
      clock: bot.clock,
      clips: { birch: await clip('A06_birch_canoe.ulaw') },
      scenario: { steps: [{ do: 'play', clip: 'birch' }], endOfScript: 'stay', maxDurationMs: 30_000 },
    });
    expect(report.outcome).toBe('server-closed');
    expect(report.close).toMatchObject({ code: CLOSE.normal, by: 'server' });
    expect(bot.llm.requests).toHaveLength(1);
    expect(bot.tts.pieces).toEqual([PHRASES.unavailable]);
    expect(report.metrics.bot.playedAudioMs).toBeGreaterThan(0);
  });

  it('says it cannot hear and hangs up when speech-to-text is lost for good', async () => {
    const stt = new ScriptedStt([], 30, 500);
    const llm = new ScriptedLlm({ replies: ['unused'] });
    const tts = new ToneTts();
    server = await startCallServer(
      (registry) => {
        registry
          .registerStt('scripted_stt', () => stt)
          .registerLlm('scripted_llm', () => llm)
          .registerTts('tone_tts', () => tts);
      },
      {},
      { clock: FAST },
    );
    const { wssUrl } = await server.createConfig({
      services: { stt: 'scripted_stt', llm: 'scripted_llm', tts: 'tone_tts' },
      config: [],
    });
    const report = await runPhoneCall({
      target: { wssUrl },
      clock: FAST,
      scenario: { steps: [], endOfScript: 'stay', maxDurationMs: 30_000 },
    });
    expect(report.outcome).toBe('server-closed');
    expect(report.close).toMatchObject({ code: CLOSE.normal, by: 'server' });
    // The apology is spoken by the offline fallback voice, then the call ends.
    expect(report.metrics.bot.playedAudioMs).toBeGreaterThan(1000);
    expect(tts.pieces).toEqual([]);
    expect(llm.requests).toHaveLength(0);
  });

  it('opens the voice with the call and closes it when the call ends', async () => {
    const bot = await startBot({ llm: { replies: ['Hello.'] }, runOnConfig: true });
    await runPhoneCall({
      target: { wssUrl: bot.wssUrl },
      clock: bot.clock,
      scenario: { steps: [{ do: 'wait-bot-silence', ms: 300 }] },
    });
    // The server sees the hang-up a moment after the simulator reports it.
    await expect.poll(() => bot.tts.closes, { timeout: 10_000 }).toBe(1);
    expect(bot.tts.warmUps).toBe(1);
  });
});

describe('the media websocket under bad input', () => {
  /** Opens a raw carrier socket and resolves with how the server closed it. */
  function rawSocket(url: string): {
    ws: WebSocket;
    closed: Promise<{ code: number; reason: string }>;
    opened: Promise<void>;
  } {
    const ws = new WebSocket(url);
    const closed = new Promise<{ code: number; reason: string }>((resolve) => {
      ws.on('close', (code, reason) => resolve({ code, reason: reason.toString() }));
    });
    const opened = new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('error', reject);
    });
    return { ws, closed, opened };
  }

  const connected = JSON.stringify({ event: 'connected', protocol: 'Call', version: '1.0.0' });
  function startMessage(streamSid: string): string {
    return JSON.stringify({
      event: 'start',
      sequenceNumber: '1',
      streamSid,
      start: {
        streamSid,
        accountSid: 'AC00000000000000000000000000000000',
        callSid: 'CA00000000000000000000000000000000',
        tracks: ['inbound'],
        customParameters: {},
        mediaFormat: { encoding: 'audio/x-mulaw', sampleRate: 8000, channels: 1 },
      },
    });
  }

  it('closes a socket for an unknown configuration with 4404 and says why', async () => {
    await startBot({ llm: { replies: ['hi'] } });
    const url = `${server!.baseUrl.replace(/^http/, 'ws')}/ws/twilio/00000000-0000-0000-0000-000000000000`;
    const { ws, closed, opened } = rawSocket(url);
    await opened;
    ws.send(connected);
    ws.send(startMessage('MZ00000000000000000000000000000000'));
    const close = await closed;
    expect(close.code).toBe(CLOSE.notFound);
    expect(close.reason).toMatch(/configuration/i);
  });

  it('closes on binary frames (1003), on a stream of malformed messages (1008) and on a flood (4429), while a real call on the same server carries on', async () => {
    const bot = await startBot({
      heard: ['go forward ten meters'],
      llm: { replies: ['Sure, going forward now.'] },
      clock: REAL_CLOCK,
    });
    const good = runPhoneCall({
      target: { wssUrl: bot.wssUrl },
      clock: bot.clock,
      clips: { forward: await clip('A07_go_forward.ulaw') },
      scenario: {
        steps: [
          { do: 'wait', ms: 300 },
          { do: 'play', clip: 'forward' },
          { do: 'wait-bot-silence', ms: 600 },
        ],
      },
    });

    const binary = rawSocket(bot.wssUrl);
    await binary.opened;
    binary.ws.send(connected);
    binary.ws.send(startMessage('MZ11111111111111111111111111111111'));
    binary.ws.send(Buffer.from([1, 2, 3]));
    expect((await binary.closed).code).toBe(CLOSE.unsupportedData);

    const malformed = rawSocket(bot.wssUrl);
    await malformed.opened;
    malformed.ws.send(connected);
    malformed.ws.send(startMessage('MZ22222222222222222222222222222222'));
    for (let i = 0; i < 30; i++)
      malformed.ws.send(i % 2 === 0 ? '{not json' : JSON.stringify({ event: 'media', media: { payload: 42 } }));
    expect((await malformed.closed).code).toBe(CLOSE.policyViolation);

    const flood = rawSocket(bot.wssUrl);
    await flood.opened;
    flood.ws.send(connected);
    flood.ws.send(startMessage('MZ33333333333333333333333333333333'));
    const frame = JSON.stringify({
      event: 'media',
      streamSid: 'MZ33333333333333333333333333333333',
      media: { track: 'inbound', chunk: '1', timestamp: '0', payload: Buffer.alloc(160, 0xff).toString('base64') },
    });
    for (let i = 0; i < 2000; i++) flood.ws.send(frame);
    expect((await flood.closed).code).toBe(CLOSE.flood);

    const report = await good;
    expect(report.outcome).toBe('completed');
    expectCleanProtocol(report);
    expect(report.metrics.utterances[0]!.replyLatencyMs).not.toBeNull();
  });
});

describe('the media websocket under audio faster than real time', () => {
  interface CarrierSocket {
    ws: WebSocket;
    messages: CarrierMessages;
    closed: Promise<{ code: number; reason: string }>;
    /** Media messages the server sent back (the bot's audio). */
    botMedia: number;
    /** Sends 20 ms frames of `mulaw` (or silence) as media messages, at once. */
    sendFrames(count: number, mulaw?: Uint8Array): void;
    /**
     * Resolves once the server has read everything sent so far: with 'open' when it answered a ping
     * sent after it (so it had not closed), with 'closed' when it closed the socket instead.
     */
    drained(): Promise<'open' | 'closed'>;
  }

  let sockets = 0;
  /** A carrier leg on a raw socket: `connected` and `start` sent, then whatever the test sends. */
  async function carrierSocket(url: string): Promise<CarrierSocket> {
    sockets += 1;
    const sid = (prefix: string) => `${prefix}${String(sockets).padStart(32, '0')}`;
    const messages = new CarrierMessages({ accountSid: sid('AC'), callSid: sid('CA'), streamSid: sid('MZ') });
    const ws = new WebSocket(url);
    let isClosed = false;
    const closed = new Promise<{ code: number; reason: string }>((resolve) => {
      ws.on('close', (code, reason) => {
        isClosed = true;
        resolve({ code, reason: reason.toString() });
      });
    });
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('error', reject);
    });
    ws.send(messages.connected());
    ws.send(messages.start({}));
    let frameIndex = 0;
    const silence = Buffer.alloc(MULAW_FRAME_BYTES, MULAW_SILENCE_BYTE);
    const socket: CarrierSocket = {
      ws,
      messages,
      closed,
      botMedia: 0,
      sendFrames(count, mulaw) {
        for (let i = 0; i < count && ws.readyState === ws.OPEN; i++) {
          const at = frameIndex * MULAW_FRAME_BYTES;
          const frame =
            mulaw && at + MULAW_FRAME_BYTES <= mulaw.length ? mulaw.subarray(at, at + MULAW_FRAME_BYTES) : silence;
          ws.send(messages.media(frameIndex + 1, frameIndex * 20, Buffer.from(frame).toString('base64')));
          frameIndex += 1;
        }
      },
      drained() {
        if (isClosed || ws.readyState !== ws.OPEN) return closed.then(() => 'closed' as const);
        return new Promise((resolve) => {
          ws.once('pong', () => resolve('open'));
          void closed.then(() => resolve('closed'));
          ws.ping();
        });
      },
    };
    ws.on('message', (data) => {
      if (String(data).startsWith('{"event":"media"')) socket.botMedia += 1;
    });
    return socket;
  }

  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

  it('closes a stream whose media messages carry far more than a frame (1009), while a real call on the same server is answered', async () => {
    const bot = await startBot({
      heard: ['go forward ten meters'],
      llm: { replies: ['Sure, going forward now.'] },
      clock: REAL_CLOCK,
    });
    const good = runPhoneCall({
      target: { wssUrl: bot.wssUrl },
      clock: bot.clock,
      clips: { forward: await clip('A07_go_forward.ulaw') },
      scenario: {
        steps: [
          { do: 'wait', ms: 300 },
          { do: 'play', clip: 'forward' },
          { do: 'wait-bot-silence', ms: 600 },
        ],
      },
    });

    // Well-formed media whose payloads hold about 4 s of audio each (45,000 base64 characters),
    // many times over: what exhausted memory before.
    const big = await carrierSocket(bot.wssUrl);
    const payload = Buffer.alloc(33_750, 0x7f).toString('base64');
    for (let i = 0; i < 20 && big.ws.readyState === big.ws.OPEN; i++)
      big.ws.send(big.messages.media(i + 1, i * 20, payload));
    expect(await big.drained()).toBe('closed');
    expect(await big.closed).toEqual({ code: CLOSE.messageTooBig, reason: 'media payload over 500 ms of audio' });

    // A batched message of up to 500 ms is fine.
    const batched = await carrierSocket(bot.wssUrl);
    batched.ws.send(batched.messages.media(1, 0, Buffer.alloc(4000, 0xff).toString('base64')));
    expect([await batched.drained(), await Promise.race([batched.closed, Promise.resolve(null)])]).toEqual([
      'open',
      null,
    ]);
    batched.ws.close();

    const report = await good;
    expect(report.outcome).toBe('completed');
    expectCleanProtocol(report);
    expect(report.metrics.utterances[0]!.replyLatencyMs).not.toBeNull();
    expect(bot.llm.requests.length).toBe(1);
  });

  it('closes a stream that sends ordinary 20 ms frames four times faster than real time (4429)', async () => {
    const bot = await startBot({ llm: { replies: ['hi'] }, clock: REAL_CLOCK });
    const fast = await carrierSocket(bot.wssUrl);
    // 200 messages a second, under the message-count limit; 80 ms of audio every 20 ms, for up to
    // 10 s (40 s of audio), then wait for the server to read it all.
    for (let tick = 0; tick < 500 && fast.ws.readyState === fast.ws.OPEN; tick++) {
      fast.sendFrames(4);
      await sleep(20);
    }
    expect(await fast.drained()).toBe('closed');
    expect(await fast.closed).toEqual({ code: CLOSE.flood, reason: 'audio faster than real time' });
  });

  it('answers a caller whose carrier delivers audio in real time but in clumps (300 ms at a time, and once after a 4 s stall, as when our own event loop was held)', async () => {
    const bot = await startBot({
      heard: ['go forward ten meters'],
      llm: { replies: ['Sure, going forward now.'] },
      clock: REAL_CLOCK,
    });
    const caller = await carrierSocket(bot.wssUrl);
    const speech = await readMulawFile(fixture('A07_go_forward.ulaw'));
    const startedAt = performance.now();
    let sent = 0;
    // Every frame goes out when wall time says it is due, in clumps: each 300 ms, or after a 4 s
    // stall a second into the call (more than a burst of 2 s, which closed such calls). Silence
    // follows the speech until the bot answers (or 20 s).
    for (let clump = 0; caller.botMedia === 0 && performance.now() - startedAt < 20_000; clump++) {
      await sleep(clump === 3 ? 4000 : 300);
      const due = Math.floor((performance.now() - startedAt) / 20);
      caller.sendFrames(due - sent, speech);
      sent = due;
      if (caller.ws.readyState !== caller.ws.OPEN) break;
    }
    expect(await caller.drained()).toBe('open');
    expect(caller.botMedia).toBeGreaterThan(0);
    expect(bot.llm.requests.length).toBe(1);
    caller.ws.send(caller.messages.stop());
    expect((await caller.closed).code).toBe(CLOSE.normal);
  });
});
