import type { IncomingMessage } from 'node:http';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { DeepgramEmulator, type DeepgramEmulatorOptions } from '../../../tools/emulators/deepgram-emulator.js';
import { type RunningEmulators, startEmulatorServer } from '../../../tools/emulators/emulator-server.js';
import type { ProviderSettings } from '../../registry.js';
import { ProviderError, type TtsOutput } from '../../types.js';
import { DeepgramAuraTts, type DeepgramAuraConfig, createDeepgramAuraTts, deepgramAuraConfig } from './index.js';
import {
  audioBytes,
  collectSpeech as collect,
  context,
  pieces,
  spoken,
  TextFeed,
  until,
  EMULATOR_ENV,
} from '../../../../test/helpers/provider-kit.js';

const KEY = 'dg_test_key_0123456789abcdef';
const FAST = { ttsFirstByteMs: 2, ttsRealTimeFactor: 50 };
/** 8 kHz mu-law bytes per character of emulated speech (60 ms each). */
const BYTES_PER_CHAR = 480;

let server: RunningEmulators;
let emulator: DeepgramEmulator;

async function start(options: DeepgramEmulatorOptions = {}): Promise<void> {
  await server?.close();
  emulator = new DeepgramEmulator({ latencies: FAST, apiKey: KEY, ...options });
  server = await startEmulatorServer([emulator]);
}

beforeEach(() => start());
afterEach(() => server.close());

function settings(over: Partial<ProviderSettings> = {}): ProviderSettings {
  return { options: {}, apiKey: KEY, serviceOptions: { base_url: server.url }, env: EMULATOR_ENV, ...over };
}

/** A text source the test feeds by hand, like an LLM that is still talking. */
async function failure(run: Promise<unknown>): Promise<unknown> {
  return run.then(
    () => undefined,
    (e: unknown) => e,
  );
}

describe('Deepgram Aura TTS against the emulator', () => {
  it('opens /v1/speak with the exact URL and Authorization header', async () => {
    let authorization: string | undefined;
    let requestUrl: string | undefined;
    server.server.on('upgrade', (req: IncomingMessage) => {
      authorization = req.headers.authorization;
      requestUrl = req.url;
    });
    const tts = createDeepgramAuraTts(settings());
    expect(tts.name).toBe('deepgram_tts');
    expect(tts.outputFormat).toEqual({ encoding: 'mulaw', sampleRateHz: 8000 });
    await collect(tts, pieces('Hello there.'));
    // Close goes out as the reply ends; let it reach the emulator.
    await until(() => emulator.log[0]?.closes === 1);

    expect(authorization).toBe(`Token ${KEY}`);
    expect(requestUrl).toBe('/v1/speak?model=aura-2-thalia-en&encoding=mulaw&sample_rate=8000');
    expect(emulator.log[0]).toMatchObject({ path: 'speak', auth: 'token' });
    expect(emulator.log[0]!.messages).toEqual([
      { type: 'Speak', text: 'Hello there.' },
      { type: 'Flush' },
      { type: 'Close' },
    ]);
  });

  it('yields each piece as audio followed by its spoken mark, in order', async () => {
    const texts = ['Thanks for calling.', 'How can I help?', 'We open at nine.'];
    const outputs = await collect(createDeepgramAuraTts(settings()), pieces(...texts));

    expect(spoken(outputs)).toEqual(texts);
    // Between two marks lies exactly the audio of the piece the second one names.
    let pieceBytes = 0;
    const perPiece: number[] = [];
    for (const out of outputs) {
      if (out.type === 'audio') pieceBytes += out.audio.length;
      else {
        perPiece.push(pieceBytes);
        pieceBytes = 0;
      }
    }
    expect(pieceBytes).toBe(0);
    expect(perPiece).toEqual(texts.map((t) => t.length * BYTES_PER_CHAR));
    expect(outputs[0]!.type).toBe('audio');

    const record = emulator.log[0]!;
    expect(record.texts).toEqual(texts);
    await until(() => record.closes === 1);
    expect(record).toMatchObject({ flushes: 3, clears: 0, closes: 1, audioBytes: audioBytes(outputs) });
    await until(() => record.closeCode !== undefined);
    expect(record.closeCode).toBe(1000);
  });

  it('maps the voice, model and speed options to the query', () => {
    const query = (over: Partial<ProviderSettings>) =>
      Object.fromEntries(new URL(deepgramAuraConfig(settings(over)).url).searchParams);
    expect(query({ options: { voice: 'aura-2-helena-en' } })).toEqual({
      model: 'aura-2-helena-en',
      encoding: 'mulaw',
      sample_rate: '8000',
    });
    expect(query({ options: { model: 'aura-asteria-en' } })).toMatchObject({ model: 'aura-asteria-en' });
    expect(
      query({ options: { voice: 'aura-2-orion-en', model: 'aura-2-thalia-en', speed: 1.2, language: 'en' } }),
    ).toEqual({
      model: 'aura-2-orion-en',
      encoding: 'mulaw',
      sample_rate: '8000',
      speed: '1.2',
    });
    expect(query({ serviceOptions: { base_url: server.url, mip_opt_out: true } })).toMatchObject({
      mip_opt_out: 'true',
    });
    expect(deepgramAuraConfig(settings({ serviceOptions: { base_url: server.url, timeout_ms: 1234 } })).timeoutMs).toBe(
      1234,
    );
    expect(() => deepgramAuraConfig(settings({ serviceOptions: { sample_rate: 24000 } }))).toThrow(
      /sample_rate cannot be set/,
    );
    expect(() => deepgramAuraConfig(settings({ options: { speed: -1 } }))).toThrow(ProviderError);

    const fromEnv = deepgramAuraConfig(
      settings({ serviceOptions: {}, env: { SWITCHBOARD_DEEPGRAM_URL: 'http://127.0.0.1:9/dg' } }),
    );
    expect(fromEnv.url).toBe('ws://127.0.0.1:9/dg/v1/speak?model=aura-2-thalia-en&encoding=mulaw&sample_rate=8000');
  });

  it('opens the socket before the first piece arrives', async () => {
    const feed = new TextFeed();
    const run = collect(createDeepgramAuraTts(settings()), feed);
    await until(() => emulator.stats.connections === 1);
    expect(emulator.log[0]!.messages).toEqual([]);
    feed.push('Hi.');
    feed.end();
    expect(spoken(await run)).toEqual(['Hi.']);
  });

  it('on abort sends Clear, stops yielding and closes', async () => {
    await start({ latencies: { ttsFirstByteMs: 2, ttsRealTimeFactor: 1 } });
    const controller = new AbortController();
    const feed = new TextFeed();
    feed.push('This sentence takes a few seconds to say in real time.');
    const outputs: TtsOutput[] = [];
    let yieldedAfterAbort = 0;
    const run = (async () => {
      for await (const out of createDeepgramAuraTts(settings()).synthesize(feed, context(controller.signal))) {
        if (controller.signal.aborted) yieldedAfterAbort += 1;
        outputs.push(out);
        if (outputs.length === 2) controller.abort();
      }
    })();
    await run;
    expect(yieldedAfterAbort).toBe(0);
    expect(outputs).toHaveLength(2);
    expect(spoken(outputs)).toEqual([]);

    const record = emulator.log[0]!;
    await until(() => record.closeCode !== undefined);
    expect(record).toMatchObject({ clears: 1, closes: 1, closeCode: 1000 });
    expect(record.messages.slice(-2)).toEqual([{ type: 'Clear' }, { type: 'Close' }]);
    // The emulator stopped generating: far less than the whole sentence was sent.
    expect(record.audioBytes).toBeLessThan(55 * BYTES_PER_CHAR);
  });

  it('fails with a non-retryable ProviderError on HTTP 401', async () => {
    const err = await failure(collect(createDeepgramAuraTts(settings({ apiKey: 'wrong-key-42' })), pieces('Hello.')));
    expect(err).toBeInstanceOf(ProviderError);
    const error = err as ProviderError;
    expect(error.provider).toBe('deepgram_tts');
    expect(error.retryable).toBe(false);
    expect(error.message).toBe('deepgram_tts: handshake refused: HTTP 401: Invalid credentials. (INVALID_AUTH)');
  });

  it('fails with a retryable ProviderError on HTTP 429 and when the handshake hangs', async () => {
    emulator.faults.next({ kind: 'reject', status: 429, message: 'Too many concurrent requests.' }, { path: 'speak' });
    const limited = (await failure(collect(createDeepgramAuraTts(settings()), pieces('Hello.')))) as ProviderError;
    expect(limited).toBeInstanceOf(ProviderError);
    expect(limited.retryable).toBe(true);
    expect(limited.message).toMatch(/HTTP 429: Too many concurrent requests/);

    emulator.faults.next({ kind: 'hang' }, { path: 'speak' });
    const tts = createDeepgramAuraTts(settings({ serviceOptions: { base_url: server.url, timeout_ms: 300 } }));
    const hung = (await failure(collect(tts, pieces('Hello.')))) as ProviderError;
    expect(hung).toBeInstanceOf(ProviderError);
    expect(hung.retryable).toBe(true);
    expect(hung.message).toMatch(/no answer to the handshake within 300 ms/);
  });

  it('fails with a retryable ProviderError when no audio comes within the timeout', async () => {
    emulator.faults.next({ kind: 'stall' }, { path: 'speak' });
    const tts = createDeepgramAuraTts(settings({ serviceOptions: { base_url: server.url, timeout_ms: 300 } }));
    // The stalled connection never sends audio, so only the 300 ms timeout can end the reply.
    const err = (await failure(collect(tts, pieces('Hello.')))) as ProviderError;
    expect(err).toBeInstanceOf(ProviderError);
    expect(err.retryable).toBe(true);
    expect(err.message).toBe('deepgram_tts: no audio within 300 ms');
  });

  it('fails with a retryable ProviderError when the socket drops mid-reply', async () => {
    await start({ latencies: { ttsFirstByteMs: 2, ttsRealTimeFactor: 1 } });
    emulator.faults.next({ kind: 'drop', afterMs: 100 }, { path: 'speak' });
    const err = (await failure(
      collect(createDeepgramAuraTts(settings()), pieces('A sentence long enough to be cut off.')),
    )) as ProviderError;
    expect(err).toBeInstanceOf(ProviderError);
    expect(err.retryable).toBe(true);
    expect(err.message).toMatch(/closed before the reply was spoken \(code 1006\)/);
  });

  it('passes the text source’s own error through unchanged', async () => {
    const feed = new TextFeed();
    const llmError = new Error('the model failed');
    feed.push('First.');
    const run = failure(collect(createDeepgramAuraTts(settings()), feed));
    await until(() => emulator.log[0]?.flushes === 1);
    feed.fail(llmError);
    expect(await run).toBe(llmError);
  });

  it('skips malformed and unknown server messages', async () => {
    const feed = new TextFeed();
    const run = collect(createDeepgramAuraTts(settings()), feed);
    await until(() => emulator.stats.activeConnections === 1);
    emulator.sendRaw('{not json', 'speak');
    emulator.sendRaw(JSON.stringify({ type: 'Flushed', sequence_id: 'zero' }), 'speak');
    emulator.sendRaw(JSON.stringify({ type: 'Flushed', sequence_id: 7 }), 'speak');
    emulator.sendRaw(JSON.stringify({ type: 'Novelty' }), 'speak');
    emulator.sendRaw(JSON.stringify({ type: 'Warning', description: 'just so you know', code: 'W' }), 'speak');
    feed.push('One.');
    feed.push('Two.');
    feed.end();
    const outputs = await run;
    expect(spoken(outputs)).toEqual(['One.', 'Two.']);
    expect(audioBytes(outputs)).toBe(8 * BYTES_PER_CHAR);
  });

  it('ignores blank pieces and speaks nothing for an empty reply', async () => {
    const outputs = await collect(createDeepgramAuraTts(settings()), pieces('  ', 'Yes.', '\n'));
    expect(spoken(outputs)).toEqual(['Yes.']);
    expect(emulator.log[0]!.flushes).toBe(1);

    const empty = await collect(createDeepgramAuraTts(settings()), pieces());
    expect(empty).toEqual([]);
    // The eager socket of an empty reply is dropped (or closed) without a word sent on it.
    await until(() => emulator.stats.activeConnections === 0);
    expect(emulator.log.slice(1).every((r) => r.flushes === 0 && r.texts.length === 0)).toBe(true);
  });

  it('shares one Flush among pieces once the flush limit is reached', async () => {
    const config: DeepgramAuraConfig = { ...deepgramAuraConfig(settings()), flushLimit: { count: 2, windowMs: 300 } };
    const texts = ['One.', 'Two.', 'Three.', 'Four.'];
    const outputs = await collect(new DeepgramAuraTts(config), pieces(...texts));
    expect(spoken(outputs)).toEqual(texts);
    expect(emulator.log[0]!.flushes).toBe(3);
    expect(audioBytes(outputs)).toBe(texts.join('').length * BYTES_PER_CHAR);
  });

  it('throws the missing-key error from the factory', () => {
    const attempt = () => createDeepgramAuraTts(settings({ apiKey: undefined }));
    expect(attempt).toThrow(ProviderError);
    expect(attempt).toThrow(
      'deepgram_tts: no API key: set api_keys.deepgram_tts in the bot configuration or DEEPGRAM_API_KEY on the server',
    );
  });

  it('returns at once when the signal is already aborted', async () => {
    const controller = new AbortController();
    controller.abort();
    expect(await collect(createDeepgramAuraTts(settings()), pieces('Hello.'), context(controller.signal))).toEqual([]);
    expect(emulator.stats.connections).toBe(0);
  });
});

describe('Deepgram emulator (speak)', () => {
  function connect(query: string): WebSocket {
    return new WebSocket(`${server.url.replace('http', 'ws')}/v1/speak?${query}`, {
      headers: { Authorization: `token ${KEY}` },
    });
  }

  it('warns after 20 flushes in a minute and ignores the rest', async () => {
    const ws = connect('model=aura-2-thalia-en&encoding=mulaw&sample_rate=8000');
    const messages: Array<Record<string, unknown>> = [];
    ws.on('message', (data, isBinary) => {
      if (!isBinary) messages.push(JSON.parse(data.toString()) as Record<string, unknown>);
    });
    await new Promise((resolve) => ws.once('open', resolve));
    for (let i = 0; i < 21; i++) {
      ws.send(JSON.stringify({ type: 'Speak', text: 'a' }));
      ws.send(JSON.stringify({ type: 'Flush' }));
    }
    await until(
      () => messages.filter((m) => m.type === 'Flushed').length === 20 && messages.some((m) => m.type === 'Warning'),
    );
    expect(messages[0]).toMatchObject({ type: 'Metadata', model_name: 'aura-2-thalia-en' });
    expect(messages.filter((m) => m.type === 'Flushed').map((m) => m.sequence_id)).toEqual([...Array(20).keys()]);
    expect(messages.find((m) => m.type === 'Warning')).toMatchObject({ code: 'FLUSH_LIMIT_EXCEEDED' });
    ws.close();
  });

  it('answers Clear with Cleared, after the configured stale chunks', async () => {
    await start({ latencies: { ttsFirstByteMs: 1, ttsRealTimeFactor: 1 }, staleChunksAfterClear: 2, ttsChunkMs: 20 });
    const ws = connect('encoding=linear16&sample_rate=16000');
    const frames: Array<{ binary: boolean; size: number; type?: string }> = [];
    ws.on('message', (data, isBinary) => {
      const buffer = data as Buffer;
      frames.push(
        isBinary
          ? { binary: true, size: buffer.length }
          : { binary: false, size: 0, type: (JSON.parse(buffer.toString()) as { type: string }).type },
      );
    });
    await new Promise((resolve) => ws.once('open', resolve));
    ws.send(JSON.stringify({ type: 'Speak', text: 'A long sentence for the tone.' }));
    ws.send(JSON.stringify({ type: 'Flush' }));
    await until(() => frames.some((f) => f.binary));
    ws.send(JSON.stringify({ type: 'Clear' }));
    await until(() => frames.some((f) => f.type === 'Cleared'));
    const clearedAt = frames.findIndex((f) => f.type === 'Cleared');
    // 20 ms of 16 kHz linear16 per chunk.
    expect(frames.slice(clearedAt - 2, clearedAt).map((f) => f.size)).toEqual([640, 640]);
    expect(frames.some((f) => f.type === 'Flushed')).toBe(false);
    ws.close();
  });
});
