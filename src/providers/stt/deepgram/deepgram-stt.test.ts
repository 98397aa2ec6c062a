import { readFileSync } from 'node:fs';
import type { IncomingMessage } from 'node:http';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { DeepgramEmulator, type DeepgramEmulatorOptions } from '../../../tools/emulators/deepgram-emulator.js';
import { type RunningEmulators, startEmulatorServer } from '../../../tools/emulators/emulator-server.js';
import type { ProviderSettings } from '../../registry.js';
import { ProviderError, type SttEvent, type SttStream } from '../../types.js';
import { DeepgramStt, type DeepgramSttConfig, createDeepgramStt, deepgramSttConfig } from './index.js';
import { context, until, EMULATOR_ENV } from '../../../../test/helpers/provider-kit.js';

const KEY = 'dg_test_key_0123456789abcdef';
const SENTENCE = 'The birch canoe slid on the smooth planks.';
const FAST = { sttFinalDelayMs: 20 };
/** 8 kHz mu-law, 3.26 s: "The birch canoe slid on the smooth planks." */
const BIRCH = new Uint8Array(readFileSync(new URL('../../../../fixtures/audio/A06_birch_canoe.ulaw', import.meta.url)));
const FRAME_BYTES = 160;

let server: RunningEmulators;
let emulator: DeepgramEmulator;

async function start(options: DeepgramEmulatorOptions = {}): Promise<void> {
  await server?.close();
  emulator = new DeepgramEmulator({
    latencies: FAST,
    apiKey: KEY,
    transcripts: [SENTENCE, 'second utterance'],
    ...options,
  });
  server = await startEmulatorServer([emulator]);
}

beforeEach(() => start());
afterEach(() => server.close());

function settings(over: Partial<ProviderSettings> = {}): ProviderSettings {
  return { options: {}, apiKey: KEY, serviceOptions: { base_url: server.url }, env: EMULATOR_ENV, ...over };
}

/** Records a stream's events and waits for the ones a test expects. */
class Events {
  readonly list: SttEvent[] = [];
  private waiters: Array<() => void> = [];

  readonly push = (event: SttEvent): void => {
    this.list.push(event);
    for (const wake of this.waiters.splice(0)) wake();
  };

  async waitFor(predicate: (event: SttEvent) => boolean, timeoutMs = 5000): Promise<SttEvent> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = this.list.find(predicate);
      if (found) return found;
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`no matching event within ${timeoutMs} ms; got ${JSON.stringify(this.list)}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  types(): string[] {
    return this.list.map((event) => event.type);
  }
}

/**
 * Writes the audio frame by frame through one reused buffer, as the call does (frames are lent),
 * scribbling the loudest mu-law byte over it after each write: a stream that kept the buffer
 * instead of copying it would send noise where the audio was silence.
 */
function feed(stream: SttStream, audio: Uint8Array): void {
  const lent = new Uint8Array(FRAME_BYTES);
  for (let at = 0; at < audio.length; at += FRAME_BYTES) {
    const frame = audio.subarray(at, at + FRAME_BYTES);
    lent.set(frame);
    stream.write(lent.subarray(0, frame.length));
    lent.fill(0x00);
  }
}

function silence(ms: number): Uint8Array {
  return new Uint8Array(ms * 8).fill(0xff);
}

async function rejection(run: Promise<unknown>): Promise<ProviderError> {
  const err = await run.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ProviderError);
  return err as ProviderError;
}

/** The adapter with quick reconnection, for the drop tests. */
function quickStt(over: Partial<DeepgramSttConfig> = {}): DeepgramStt {
  return new DeepgramStt({ ...deepgramSttConfig(settings()), reconnectBackoffMs: 10, ...over });
}

describe('Deepgram STT against the emulator', () => {
  it('opens the socket with the exact URL, query and Authorization header', async () => {
    let authorization: string | undefined;
    let requestUrl: string | undefined;
    server.server.on('upgrade', (req: IncomingMessage) => {
      authorization = req.headers.authorization;
      requestUrl = req.url;
    });
    const stt = createDeepgramStt(settings());
    expect(stt.name).toBe('deepgram');
    expect(stt.inputFormat).toEqual({ encoding: 'mulaw', sampleRateHz: 8000 });
    const stream = await stt.open(context(), () => undefined);

    expect(authorization).toBe(`Token ${KEY}`);
    expect(requestUrl).toBe(
      '/v1/listen?model=nova-3&language=en-US&encoding=mulaw&sample_rate=8000&channels=1&interim_results=true' +
        '&endpointing=300&utterance_end_ms=1000&vad_events=true&smart_format=true',
    );
    expect(emulator.log[0]).toMatchObject({
      path: 'listen',
      auth: 'token',
      query: { model: 'nova-3', encoding: 'mulaw' },
    });
    await stream.close();
  });

  it('turns speech into SpeechStarted, interim and final results, then UtteranceEnd', async () => {
    const events = new Events();
    // The clip pauses for 300 ms after "the birch canoe" (the emulator's 20 ms windows), which the
    // default 300 ms endpointing ends an utterance on: its final would then cover whatever audio had
    // reached the emulator when the final went out, all of it or, on a starved machine, part. With
    // 500 ms the one endpoint is in the trailing silence, so what the final covers is fixed.
    const stream = await createDeepgramStt(
      settings({ serviceOptions: { base_url: server.url, endpointing: 500 } }),
    ).open(context(), events.push);
    feed(stream, BIRCH);
    feed(stream, silence(1500));

    const final = await events.waitFor((e) => e.type === 'final' && e.text.length > 0);
    expect(final).toEqual({ type: 'final', text: SENTENCE, speechFinal: true, coveredToMs: expect.any(Number) });
    // The final covers the audio up to the vendor's endpoint: past the speech, within what was sent.
    const { coveredToMs } = final as { coveredToMs: number };
    expect(coveredToMs).toBeGreaterThanOrEqual(BIRCH.length / 8);
    expect(coveredToMs).toBeLessThanOrEqual(BIRCH.length / 8 + 1500);
    await events.waitFor((e) => e.type === 'utterance-end');

    const types = events.types();
    const interims = events.list.filter((e): e is Extract<SttEvent, { type: 'interim' }> => e.type === 'interim');
    expect(interims.length).toBeGreaterThan(1);
    // Interim text grows word by word towards the final transcript.
    expect(SENTENCE.startsWith(interims[0]!.text)).toBe(true);
    expect(interims.at(-1)!.text.length).toBeGreaterThan(interims[0]!.text.length);
    expect(types.indexOf('speech-started')).toBe(0);
    expect(types.indexOf('final')).toBeGreaterThan(types.lastIndexOf('interim'));
    expect(types.indexOf('utterance-end')).toBeGreaterThan(types.indexOf('final'));
    // The last few bytes, short of a message, go out before CloseStream.
    await stream.close();
    expect(emulator.log[0]!.audioBytes).toBe(BIRCH.length + 1500 * 8);
  });

  it('answers finalize() with a prompt final, with no silence sent', async () => {
    const events = new Events();
    // The recording has a 300 ms pause inside and 420 ms of room tone at its end, either enough for
    // the default 300 ms endpointing to end the utterance on its own and race the Finalize on a
    // loaded machine. Endpointing longer than any of them leaves Finalize the only way to a final.
    const serviceOptions = { base_url: server.url, endpointing: 5000 };
    const stream = await createDeepgramStt(settings({ serviceOptions })).open(context(), events.push);
    feed(stream, BIRCH);
    await events.waitFor((e) => e.type === 'interim');
    stream.finalize();

    // No silence follows the speech, so the vendor's endpointing cannot end the utterance: the
    // final is the answer to Finalize, however long the interim took to arrive.
    const final = await events.waitFor((e) => e.type === 'final');
    expect(final).toMatchObject({ type: 'final', text: SENTENCE });
    expect(emulator.log[0]!.finals).toEqual([
      { transcript: SENTENCE, fromFinalize: true, speechFinal: expect.any(Boolean) },
    ]);
    expect(emulator.log[0]!.finalizes).toBe(1);
    expect(emulator.log[0]!.messages).toContainEqual({ type: 'Finalize' });
    await stream.close();
  });

  it('sends the audio in 40 ms messages, and a Finalize after an odd number of frames follows all of it', async () => {
    const events = new Events();
    const stream = await createDeepgramStt(settings()).open(context(), events.push);
    const written = BIRCH.subarray(0, 21 * FRAME_BYTES);
    feed(stream, written);
    await until(() => emulator.log[0]!.audioBytes === 20 * FRAME_BYTES);
    // Twenty 20 ms frames went out as ten messages; the 21st waits for its pair.
    expect(emulator.log[0]!.audioFrames).toBe(10);
    stream.finalize();

    await events.waitFor((e) => e.type === 'final');
    // The Finalize came after every byte written, so the final covers the last word.
    expect(emulator.log[0]!.audioBytesAtFinalize).toEqual([written.length]);
    expect(emulator.log[0]!.audioFrames).toBe(11);
    await stream.close();
  });

  it('sends a frame left without its pair once the carrier has been quiet for the KeepAlive interval', async () => {
    const stream = await quickStt({ keepAliveIntervalMs: 80 }).open(context(), () => undefined);
    feed(stream, BIRCH.subarray(0, 3 * FRAME_BYTES));
    // Nothing more comes: the third frame goes out in place of the first KeepAlive.
    await until(() => emulator.log[0]!.audioBytes === 3 * FRAME_BYTES);
    expect(emulator.log[0]!.audioFrames).toBe(2);
    expect(emulator.log[0]!.keepAlives).toBe(0);
    await stream.close();
  });

  it('maps the model and language options and service_options to the query', async () => {
    const config = deepgramSttConfig(
      settings({
        options: { model: 'nova-2-phonecall', language: 'multi', voice: 'ignored' },
        serviceOptions: {
          base_url: server.url,
          timeout_ms: 2500,
          endpointing: 500,
          utterance_end_ms: 1500,
          smart_format: false,
          keyterm: ['Switchboard', 'PIN'],
          mip_opt_out: true,
        },
      }),
    );
    const query = new URL(config.url).searchParams;
    expect(config.url.startsWith(`${server.url.replace('http', 'ws')}/v1/listen?`)).toBe(true);
    expect(Object.fromEntries(query)).toMatchObject({
      model: 'nova-2-phonecall',
      language: 'multi',
      endpointing: '500',
      utterance_end_ms: '1500',
      smart_format: 'false',
      mip_opt_out: 'true',
    });
    expect(query.getAll('keyterm')).toEqual(['Switchboard', 'PIN']);
    expect(config.timeoutMs).toBe(2500);

    const stream = await new DeepgramStt(config).open(context(), () => undefined);
    expect(emulator.log[0]!.query).toMatchObject({
      model: 'nova-2-phonecall',
      language: 'multi',
      keyterm: ['Switchboard', 'PIN'],
    });
    await stream.close();

    // endpointing can be turned off; the fixed audio parameters cannot be overridden.
    const off = deepgramSttConfig(settings({ serviceOptions: { base_url: server.url, endpointing: false } }));
    expect(new URL(off.url).searchParams.get('endpointing')).toBe('false');
    expect(() => deepgramSttConfig(settings({ serviceOptions: { encoding: 'linear16' } }))).toThrow(
      /encoding cannot be set/,
    );
    expect(() => deepgramSttConfig(settings({ options: { model: 5 } }))).toThrow(ProviderError);
    expect(() => deepgramSttConfig(settings({ serviceOptions: { endpointing: 'soon' } }))).toThrow(/endpointing/);
  });

  it('takes the endpoint from SWITCHBOARD_DEEPGRAM_URL when the bot sets no base_url', () => {
    const config = deepgramSttConfig(
      settings({ serviceOptions: {}, env: { SWITCHBOARD_DEEPGRAM_URL: 'https://dg.example.test/proxy/' } }),
    );
    expect(config.url.startsWith('wss://dg.example.test/proxy/v1/listen?model=nova-3&')).toBe(true);
    const publicOrigin = deepgramSttConfig(settings({ serviceOptions: {} }));
    expect(publicOrigin.url.startsWith('wss://api.deepgram.com/v1/listen?')).toBe(true);
  });

  it('reconnects when the socket drops mid-utterance and still transcribes it', async () => {
    const events = new Events();
    const stream = await quickStt().open(context(), events.push);
    const half = 1600 * 8;
    feed(stream, BIRCH.subarray(0, half));
    await events.waitFor((e) => e.type === 'interim');

    emulator.dropConnections('listen');
    // Written while the drop is not yet noticed, and while reconnecting: kept and replayed.
    feed(stream, BIRCH.subarray(half));
    feed(stream, silence(1500));

    const final = await events.waitFor((e) => e.type === 'final' && e.text.length > 0);
    expect(final).toMatchObject({ text: SENTENCE, speechFinal: true });
    expect(events.list.some((e) => e.type === 'error')).toBe(false);
    const connections = emulator.log.filter((c) => c.path === 'listen');
    expect(connections).toHaveLength(2);
    expect(connections[0]!.closeCode).toBe(1006);
    // The replay is bounded (3 s by default): the speech after the first 1.76 s, then the silence.
    expect(connections[1]!.audioBytes).toBe(3000 * 8);

    // The stream keeps working on the new socket.
    feed(stream, BIRCH);
    stream.finalize();
    await events.waitFor((e) => e.type === 'final' && e.text === 'second utterance');
    await stream.close();
  });

  it('replays the unfinalized audio after a drop that happens once the caller has paused', async () => {
    const events = new Events();
    // 500 ms endpointing, so the clip's own 300 ms pause (in its first 800 ms) never ends the
    // utterance before the drop: with the default 300 ms, a final that went out before the drop
    // on a loaded machine covered that audio, and nothing was left to replay.
    const endpointing = settings({ serviceOptions: { base_url: server.url, endpointing: 500 } });
    const stream = await new DeepgramStt({ ...deepgramSttConfig(endpointing), reconnectBackoffMs: 10 }).open(
      context(),
      events.push,
    );
    feed(stream, silence(200));
    feed(stream, BIRCH.subarray(0, 800 * 8));
    await events.waitFor((e) => e.type === 'interim');
    emulator.dropConnections('listen');
    await until(() => emulator.stats.connections === 2 && emulator.stats.activeConnections === 1);

    feed(stream, silence(1500));
    const final = await events.waitFor((e) => e.type === 'final' && e.text.length > 0);
    expect(final).toMatchObject({ text: SENTENCE });
    // Everything written before the drop was replayed (no final had covered any of it); the
    // last frame, waiting for its pair, goes out before CloseStream.
    await stream.close();
    expect(emulator.log[1]!.audioBytes).toBe((200 + 800 + 1500) * 8);
  });

  it('replays a frame that was waiting for its pair when the socket dropped, once', async () => {
    const events = new Events();
    // Endpointing longer than the silence below: only the Finalize ends the utterance, so the
    // final is its answer, whenever the emulator's own timer would have fired on a slow machine.
    const stream = await new DeepgramStt({
      ...deepgramSttConfig(settings({ serviceOptions: { base_url: server.url, endpointing: 2000 } })),
      reconnectBackoffMs: 10,
    }).open(context(), events.push);
    const written = BIRCH.subarray(0, 41 * FRAME_BYTES);
    feed(stream, written);
    await until(() => emulator.log[0]!.audioBytes === 40 * FRAME_BYTES);
    emulator.dropConnections('listen');
    await until(() => emulator.stats.connections === 2 && emulator.stats.activeConnections === 1);

    feed(stream, silence(1500));
    stream.finalize();
    await events.waitFor((e) => e.type === 'final' && e.text.length > 0);
    // No final covered any of it: everything written is replayed, the waiting frame exactly once.
    expect(emulator.log[1]!.audioBytesAtFinalize).toEqual([written.length + 1500 * 8]);
    await stream.close();
  });

  it('repeats a Finalize that was lost with the socket once it is back', async () => {
    const events = new Events();
    // Endpointing longer than the clip's pauses: on a slow machine the emulator could otherwise end
    // the utterance on its own before the drop, where only the Finalize may.
    const stream = await new DeepgramStt({
      ...deepgramSttConfig(settings({ serviceOptions: { base_url: server.url, endpointing: 2000 } })),
      reconnectBackoffMs: 10,
    }).open(context(), events.push);
    feed(stream, BIRCH.subarray(0, 1000 * 8));
    await events.waitFor((e) => e.type === 'interim');
    emulator.dropConnections('listen');
    // Goes out on the dead socket before the drop is noticed.
    stream.finalize();

    // No silence follows, so only a Finalize on the new socket can produce this final.
    const final = await events.waitFor((e) => e.type === 'final' && e.text.length > 0);
    expect(final).toMatchObject({ text: SENTENCE });
    expect(emulator.log[0]!.finalizes).toBe(0);
    expect(emulator.log[1]!.finalizes).toBe(1);
    await stream.close();
  });

  it('emits an error event when reconnection fails for good (retryable status)', async () => {
    const events = new Events();
    const stream = await quickStt({ reconnectAttempts: 3 }).open(context(), events.push);
    emulator.faults.next(
      { kind: 'reject', status: 503, message: 'Service temporarily unavailable.' },
      { path: 'listen', count: Infinity },
    );
    emulator.dropConnections('listen');

    const event = await events.waitFor((e) => e.type === 'error');
    const error = (event as Extract<SttEvent, { type: 'error' }>).error;
    expect(error).toBeInstanceOf(ProviderError);
    expect(error.provider).toBe('deepgram');
    expect(error.retryable).toBe(true);
    expect(error.message).toMatch(/HTTP 503: Service temporarily unavailable/);
    expect(emulator.stats.rejectedHandshakes).toBe(3);
    // A failed stream ignores further calls and closes quietly.
    feed(stream, BIRCH);
    stream.finalize();
    await stream.close();
    expect(events.list.filter((e) => e.type === 'error')).toHaveLength(1);
  });

  it('stops reconnecting at once when the key is refused', async () => {
    const events = new Events();
    const stream = await quickStt({ reconnectAttempts: 5 }).open(context(), events.push);
    emulator.faults.next(
      { kind: 'reject', status: 401, message: 'Invalid credentials.' },
      { path: 'listen', count: Infinity },
    );
    emulator.dropConnections('listen');

    const event = await events.waitFor((e) => e.type === 'error');
    const error = (event as Extract<SttEvent, { type: 'error' }>).error;
    expect(error.retryable).toBe(false);
    expect(error.message).toMatch(/HTTP 401/);
    expect(emulator.stats.rejectedHandshakes).toBe(1);
    await stream.close();
  });

  it('rejects open() with a non-retryable ProviderError on HTTP 401', async () => {
    const stt = createDeepgramStt(settings({ apiKey: 'wrong-key-42' }));
    const error = await rejection(stt.open(context(), () => undefined));
    expect(error.retryable).toBe(false);
    expect(error.message).toBe('deepgram: handshake refused: HTTP 401: Invalid credentials. (INVALID_AUTH)');
    expect(error.message).not.toContain('wrong-key-42');
    expect(emulator.log[0]!.rejectedStatus).toBe(401);
  });

  it('rejects open() with a retryable ProviderError when the handshake hangs', async () => {
    emulator.faults.next({ kind: 'hang' });
    const stt = createDeepgramStt(settings({ serviceOptions: { base_url: server.url, timeout_ms: 300 } }));
    // The handshake never completes, so only the 300 ms timeout can end open().
    const error = await rejection(stt.open(context(), () => undefined));
    expect(error.retryable).toBe(true);
    expect(error.message).toMatch(/no answer to the handshake within 300 ms/);
  });

  it('rejects open() with a retryable ProviderError when nothing listens', async () => {
    const stt = createDeepgramStt(settings({ serviceOptions: { base_url: 'http://127.0.0.1:1' } }));
    const error = await rejection(stt.open(context(), () => undefined));
    expect(error.retryable).toBe(true);
    expect(error.message).toMatch(/connection failed/);
  });

  it('rejects open() with the abort error when the call ends during the handshake', async () => {
    emulator.faults.next({ kind: 'hang' });
    const controller = new AbortController();
    const opening = createDeepgramStt(settings()).open(context(controller.signal), () => undefined);
    setTimeout(() => controller.abort(), 50);
    await expect(opening).rejects.toMatchObject({ name: 'AbortError' });
  });

  it('skips malformed and unknown server messages', async () => {
    const events = new Events();
    const stream = await createDeepgramStt(settings()).open(context(), events.push);
    emulator.sendRaw('{not json', 'listen');
    emulator.sendRaw('[1, 2, 3]', 'listen');
    emulator.sendRaw(JSON.stringify({ type: 'Results', channel: 'not an object' }), 'listen');
    emulator.sendRaw(JSON.stringify({ type: 'SomethingNew', detail: 1 }), 'listen');
    emulator.sendRaw(JSON.stringify({ type: 'Metadata', request_id: 'r' }), 'listen');
    feed(stream, BIRCH);
    feed(stream, silence(600));

    const final = await events.waitFor((e) => e.type === 'final');
    expect(final).toMatchObject({ text: SENTENCE });
    expect(events.list.some((e) => e.type === 'error')).toBe(false);
    expect(emulator.log).toHaveLength(1);
    await stream.close();
  });

  it('throws the missing-key error from the factory', () => {
    const attempt = () => createDeepgramStt(settings({ apiKey: undefined }));
    expect(attempt).toThrow(ProviderError);
    expect(attempt).toThrow(
      'deepgram: no API key: set api_keys.deepgram in the bot configuration or DEEPGRAM_API_KEY on the server',
    );
  });

  it('sends KeepAlive while no audio flows, which keeps an idle socket open', async () => {
    await start({ idleTimeoutMs: 300 });
    const events = new Events();
    const stream = await quickStt({ keepAliveIntervalMs: 80 }).open(context(), events.push);
    await new Promise((resolve) => setTimeout(resolve, 800));
    expect(emulator.log[0]!.keepAlives).toBeGreaterThanOrEqual(3);
    expect(emulator.log[0]!.messages).toContainEqual({ type: 'KeepAlive' });
    expect(emulator.stats.idleTimeouts).toBe(0);
    expect(emulator.log).toHaveLength(1);
    // While audio flows, no KeepAlive is needed.
    const before = emulator.log[0]!.keepAlives;
    for (let i = 0; i < 20; i++) {
      stream.write(silence(20));
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(emulator.log[0]!.keepAlives - before).toBeLessThanOrEqual(1);
    await stream.close();
  });

  it('close() sends CloseStream, delivers the last final and waits for the server to close', async () => {
    const events = new Events();
    // A close wait longer than the test's timeout: close() resolves only on the server's close.
    const stream = await quickStt({ closeWaitMs: 600_000 }).open(context(), events.push);
    feed(stream, BIRCH);
    await stream.close();
    expect(events.list.find((e) => e.type === 'final')).toMatchObject({ text: SENTENCE });
    await until(() => emulator.log[0]!.closeCode !== undefined);
    expect(emulator.log[0]).toMatchObject({ closeStreams: 1, closeCode: 1000 });
    // 163 frames and 7 bytes: 81 messages of two frames, then the rest, sent before CloseStream.
    expect(emulator.log[0]).toMatchObject({ audioBytes: BIRCH.length, audioFrames: 82 });
    // Closing again is harmless; writes after close are dropped.
    await stream.close();
    stream.write(BIRCH.subarray(0, 160));
    expect(emulator.log[0]!.audioBytes).toBe(BIRCH.length);
  });

  it('closes with CloseStream and goes quiet when the call is aborted', async () => {
    const events = new Events();
    const controller = new AbortController();
    const stream = await createDeepgramStt(settings()).open(context(controller.signal), events.push);
    feed(stream, BIRCH);
    controller.abort();
    await until(() => emulator.log[0]!.closeCode !== undefined);
    expect(emulator.log[0]!.closeStreams).toBe(1);
    expect(events.list.some((e) => e.type === 'final')).toBe(false);
    await stream.close();
  });
});

describe('Deepgram emulator (listen)', () => {
  function connect(
    query: string,
    headers: Record<string, string> = { Authorization: `Token ${KEY}` },
    protocols?: string[],
  ): WebSocket {
    return new WebSocket(`${server.url.replace('http', 'ws')}/v1/listen?${query}`, protocols, { headers });
  }

  function closed(ws: WebSocket): Promise<{ code: number; reason: string }> {
    return new Promise((resolve) => ws.once('close', (code, reason) => resolve({ code, reason: reason.toString() })));
  }

  it('closes an idle socket with 1011 NET-0001', async () => {
    await start({ idleTimeoutMs: 200 });
    const ws = connect('encoding=mulaw&sample_rate=8000');
    await new Promise((resolve) => ws.once('open', resolve));
    const startedMs = performance.now();
    expect(await closed(ws)).toEqual({ code: 1011, reason: 'NET-0001' });
    expect(performance.now() - startedMs).toBeGreaterThanOrEqual(150);
    expect(emulator.stats.idleTimeouts).toBe(1);
  });

  it('answers CloseStream with Metadata, then closes with 1000', async () => {
    const ws = connect('encoding=mulaw&sample_rate=8000');
    const messages: Array<Record<string, unknown>> = [];
    ws.on('message', (data) => messages.push(JSON.parse(data.toString()) as Record<string, unknown>));
    await new Promise((resolve) => ws.once('open', resolve));
    ws.send(silence(500));
    ws.send(JSON.stringify({ type: 'CloseStream' }));
    expect((await closed(ws)).code).toBe(1000);
    expect(messages.at(-1)).toMatchObject({
      type: 'Metadata',
      duration: 0.5,
      channels: 1,
      transaction_key: 'deprecated',
    });
  });

  it('accepts the key as subprotocols and refuses bad queries with 400 and dg-error', async () => {
    const ws = connect('encoding=mulaw&sample_rate=8000', {}, ['token', KEY]);
    await new Promise((resolve) => ws.once('open', resolve));
    expect(ws.protocol).toBe('token');
    expect(emulator.log[0]!.auth).toBe('subprotocol-token');
    ws.close();

    const refused = connect('encoding=wav&sample_rate=8000');
    refused.on('error', () => undefined);
    const response = await new Promise<IncomingMessage>((resolve) =>
      refused.once('unexpected-response', (_req, res) => resolve(res)),
    );
    expect(response.statusCode).toBe(400);
    expect(response.headers['dg-error']).toMatch(/Invalid encoding/);
    expect(response.headers['dg-request-id']).toBe(emulator.log[1]!.requestId);
    refused.terminate();
  });

  it('answers Finalize only while speech not yet finalised is buffered (Deepgram: a response MAY come), and sends speech_final after endpointing', async () => {
    const ws = connect('encoding=mulaw&sample_rate=8000&interim_results=false&endpointing=300');
    const messages: Array<Record<string, unknown>> = [];
    ws.on('message', (data) => messages.push(JSON.parse(data.toString()) as Record<string, unknown>));
    await new Promise((resolve) => ws.once('open', resolve));
    const transcript = (m: Record<string, unknown>) =>
      (m.channel as { alternatives: Array<{ transcript: string }> }).alternatives[0]!.transcript;
    // No one spoke: nothing buffered, nothing to answer.
    ws.send(silence(400));
    ws.send(JSON.stringify({ type: 'Finalize' }));

    ws.send(BIRCH);
    ws.send(silence(400));
    await until(() => messages.some((m) => m.speech_final === true));
    expect(messages).toHaveLength(1);
    expect(messages[0]).toMatchObject({
      type: 'Results',
      is_final: true,
      speech_final: true,
      from_finalize: false,
      start: 0,
    });
    // No smart_format or punctuate: lower case, no punctuation, like Deepgram.
    expect(transcript(messages[0]!)).toBe('the birch canoe slid on the smooth planks');

    // Everything said is final already (endpointing fired in the pause): Finalize gets no answer.
    ws.send(JSON.stringify({ type: 'Finalize' }));
    // Speech with no pause after it is buffered: Finalize answers it at once.
    ws.send(BIRCH.subarray(0, 8000));
    ws.send(JSON.stringify({ type: 'Finalize' }));
    await until(() => messages.length === 2);
    expect(messages[1]).toMatchObject({ type: 'Results', is_final: true, from_finalize: true });
    expect(transcript(messages[1]!)).toBe('second utterance');
    // Each Finalize was received; only the last had anything to answer.
    expect(emulator.log.at(-1)!.finalizes).toBe(3);
    expect(messages.some((m) => m.is_final === false)).toBe(false);
    expect(messages.some((m) => m.type === 'SpeechStarted')).toBe(false);
    ws.close();
  });
});
