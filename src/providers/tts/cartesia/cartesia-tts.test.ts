import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { CartesiaEmulator, type CartesiaEmulatorOptions } from '../../../tools/emulators/cartesia-emulator.js';
import { type RunningEmulators, startEmulatorServer } from '../../../tools/emulators/emulator-server.js';
import type { ProviderSettings } from '../../registry.js';
import type { TtsOutput } from '../../types.js';
import { CARTESIA_VERSION } from './cartesia-messages.js';
import { DEFAULT_CARTESIA_VOICE_ID, createCartesiaTts } from './index.js';
import {
  audioBytes,
  startStallingRefusal,
  collectSpeech as collect,
  context,
  pieces,
  providerFailure as failure,
  spoken,
  TextFeed,
  EMULATOR_ENV,
} from '../../../../test/helpers/provider-kit.js';

const KEY = 'sk_car_test_0123456789';
const FAST = { ttsFirstByteMs: 2, ttsRealTimeFactor: 50 };
/** 8 kHz mu-law bytes per character of emulated speech (60 ms each). */
const BYTES_PER_CHAR = 480;

let server: RunningEmulators;
let emulator: CartesiaEmulator;

async function start(options: CartesiaEmulatorOptions = {}): Promise<void> {
  await server?.close();
  emulator = new CartesiaEmulator({ latencies: FAST, apiKey: KEY, ...options });
  server = await startEmulatorServer([emulator]);
}

beforeEach(() => start());
afterEach(() => server.close());

function settings(over: Partial<ProviderSettings> = {}): ProviderSettings {
  return { options: {}, apiKey: KEY, serviceOptions: { base_url: server.url }, env: EMULATOR_ENV, ...over };
}

/** A text source the test feeds by hand, like an LLM that is still talking. */
describe('Cartesia TTS against the emulator', () => {
  it('sends the exact handshake and first message', async () => {
    const tts = createCartesiaTts(settings());
    expect(tts.outputFormat).toEqual({ encoding: 'mulaw', sampleRateHz: 8000 });
    await collect(tts, pieces('Hello there.'));

    const connection = emulator.connections[0]!;
    expect(connection.path).toBe('/tts/websocket');
    expect(connection.headers.authorization).toBe('[redacted]');
    expect(connection.headers['cartesia-version']).toBe(CARTESIA_VERSION);
    const first = connection.messages[0] as Record<string, unknown>;
    expect(first).toEqual({
      max_buffer_delay_ms: 0,
      context_id: expect.stringMatching(/^sb-/),
      model_id: 'sonic-2',
      transcript: 'Hello there. ',
      voice: { mode: 'id', id: DEFAULT_CARTESIA_VOICE_ID },
      output_format: { container: 'raw', encoding: 'pcm_mulaw', sample_rate: 8000 },
      continue: true,
      add_timestamps: true,
      use_normalized_timestamps: false,
      language: 'en',
    });
  });

  it('streams the pieces of a reply into one context, then ends its input', async () => {
    const tts = createCartesiaTts(settings());
    const texts = ['Thanks for calling.', 'How can I help?', 'We open at nine.'];
    const outputs = await collect(tts, pieces(...texts));

    const record = emulator.contexts[0]!;
    expect(emulator.contexts).toHaveLength(1);
    expect(record.transcripts).toEqual(texts.map((t) => `${t} `));
    expect(record.requests.map((r) => r.continue)).toEqual([true, true, true, false]);
    expect(record.requests.at(-1)!.transcript).toBe('');
    expect(new Set(record.requests.map((r) => r.context_id)).size).toBe(1);
    expect(record.done).toBe(true);

    // Every byte the emulator sent arrives, exactly: 60 ms (480 mu-law bytes) per character.
    expect(audioBytes(outputs)).toBe(record.audioBytes);
    expect(record.audioBytes).toBe(texts.join('').length * BYTES_PER_CHAR);
    expect(outputs.filter((o) => o.type === 'audio').every((o) => o.type === 'audio' && o.audio.length > 0)).toBe(true);
  });

  it('reports words as spoken once their audio has arrived, in order', async () => {
    const tts = createCartesiaTts(settings());
    const texts = ['Thanks for calling.', 'How can I help?'];
    const outputs = await collect(tts, pieces(...texts));

    expect(spoken(outputs).join(' ')).toBe(texts.join(' '));
    // Word by word as the timestamps are confirmed by audio, not all at the end.
    expect(spoken(outputs).length).toBeGreaterThan(2);
    // Where each word ends in the emulated audio (60 ms per character, pieces back to back).
    const wordEndChars: number[] = [];
    let pieceStart = 0;
    for (const text of texts) {
      for (const match of text.matchAll(/\S+/g)) wordEndChars.push(pieceStart + match.index + match[0].length);
      pieceStart += text.length;
    }
    let bytesSoFar = 0;
    let wordsSpoken = 0;
    for (const output of outputs) {
      if (output.type === 'audio') {
        bytesSoFar += output.audio.length;
        continue;
      }
      wordsSpoken += output.text.split(' ').length;
      // Reported only once the audio received covers the last word's end.
      expect(bytesSoFar).toBeGreaterThanOrEqual(wordEndChars[wordsSpoken - 1]! * BYTES_PER_CHAR - 8);
    }
    expect(wordsSpoken).toBe(wordEndChars.length);
    expect(outputs.at(-1)!.type).toBe('spoken');
    const firstSpoken = outputs.findIndex((o) => o.type === 'spoken');
    const lastAudio = outputs.map((o) => o.type).lastIndexOf('audio');
    expect(firstSpoken).toBeLessThan(lastAudio);
  });

  it('reuses one socket for the replies of a call, a context per reply', async () => {
    const tts = createCartesiaTts(settings());
    const first = await collect(tts, pieces('One.'));
    const second = await collect(tts, pieces('Two two.'));
    expect(emulator.connections).toHaveLength(1);
    expect(emulator.contexts).toHaveLength(2);
    expect(emulator.contexts[0]!.contextId).not.toBe(emulator.contexts[1]!.contextId);
    expect(audioBytes(first)).toBe(emulator.contexts[0]!.audioBytes);
    expect(audioBytes(second)).toBe(emulator.contexts[1]!.audioBytes);
  });

  it('opens the socket before the first piece arrives', async () => {
    const tts = createCartesiaTts(settings());
    const feed = new TextFeed();
    const run = collect(tts, feed);
    await vi.waitFor(() => expect(emulator.stats.activeConnections).toBe(1));
    expect(emulator.contexts).toHaveLength(0);
    feed.push('Now.');
    feed.end();
    expect(audioBytes(await run)).toBe(4 * BYTES_PER_CHAR);
  });

  it('cancels at the vendor on barge-in and yields nothing after, dropping stale audio', async () => {
    await start({ latencies: { ttsFirstByteMs: 2, ttsRealTimeFactor: 2 }, staleChunksAfterCancel: 3 });
    const tts = createCartesiaTts(settings());
    const feed = new TextFeed();
    const abort = new AbortController();
    const outputs: TtsOutput[] = [];
    feed.push('This is a long first sentence that takes a while to speak.');
    for await (const output of tts.synthesize(feed, context(abort.signal))) {
      outputs.push(output);
      if (output.type === 'audio' && outputs.length === 2) abort.abort();
    }
    expect(outputs).toHaveLength(2);

    const record = emulator.contexts[0]!;
    await vi.waitFor(() => expect(emulator.cancels).toEqual([record.contextId]));
    expect(record.cancelled).toBe(true);
    expect(record.done).toBe(false);
    expect(record.chunksAfterCancel).toBe(3);

    // The same socket serves the next reply; the stale chunks of the cancelled context are not in it.
    const next = await collect(tts, pieces('Yes?'));
    expect(emulator.connections).toHaveLength(1);
    expect(audioBytes(next)).toBe(4 * BYTES_PER_CHAR);
    expect(spoken(next)).toEqual(['Yes?']);
  });

  it('drops audio already received but not yet taken when aborted', async () => {
    const tts = createCartesiaTts(settings());
    const abort = new AbortController();
    const outputs = tts
      .synthesize(pieces('A sentence with plenty of audio in it.'), context(abort.signal))
      [Symbol.asyncIterator]();
    expect((await outputs.next()).value).toMatchObject({ type: 'audio' });
    await vi.waitFor(() => expect(emulator.contexts[0]!.chunks).toBeGreaterThan(3));
    abort.abort();
    expect(await outputs.next()).toEqual({ done: true, value: undefined });
  });

  it('stops at once when aborted before any audio, without throwing', async () => {
    await start({ latencies: { ttsFirstByteMs: 5000, ttsRealTimeFactor: 50 } });
    const tts = createCartesiaTts(settings());
    const feed = new TextFeed();
    const abort = new AbortController();
    const run = collect(tts, feed, context(abort.signal));
    feed.push('Hello.');
    await vi.waitFor(() => expect(emulator.contexts).toHaveLength(1));
    abort.abort();
    expect(await run).toEqual([]);
    await vi.waitFor(() => expect(emulator.cancels).toHaveLength(1));
  });

  it('ends with the text source’s own error and cancels the context', async () => {
    const tts = createCartesiaTts(settings());
    const feed = new TextFeed();
    const llmError = new Error('llm went away');
    const run = collect(tts, feed);
    feed.push('First.');
    await vi.waitFor(() => expect(emulator.contexts).toHaveLength(1));
    feed.fail(llmError);
    await expect(run).rejects.toBe(llmError);
    await vi.waitFor(() => expect(emulator.cancels).toHaveLength(1));
  });

  it('says nothing and opens no context for an empty reply', async () => {
    const tts = createCartesiaTts(settings());
    expect(await collect(tts, pieces('', '  '))).toEqual([]);
    expect(emulator.contexts).toHaveLength(0);
  });

  it('refuses a wrong key with a non-retryable error that does not show the key', async () => {
    const tts = createCartesiaTts(settings({ apiKey: 'sk_car_wrong_key_999' }));
    const err = await failure(collect(tts, pieces('Hello.')));
    expect(err.retryable).toBe(false);
    expect(err.message).toBe('cartesia: handshake refused: HTTP 401: Unauthorized: Invalid API key');
    expect(err.message).not.toContain('sk_car_wrong_key_999');
  });

  it('reports a refusal whose body never ends, rather than waiting for it', async () => {
    const stalling = await startStallingRefusal(401, '{"title":"Unauthorized","message":"Invalid');
    try {
      const tts = createCartesiaTts(settings({ serviceOptions: { base_url: stalling.url } }));
      const err = await failure(collect(tts, pieces('Hello.')));
      expect(err.message).toMatch(/^cartesia: handshake refused: HTTP 401/);
      expect(err.retryable).toBe(false);
    } finally {
      await stalling.close();
    }
  });

  it('makes a 5xx handshake retryable, and recovers on the next reply', async () => {
    emulator.faults.next({ kind: 'reject', status: 503 });
    const tts = createCartesiaTts(settings());
    const err = await failure(collect(tts, pieces('Hello.')));
    expect(err.retryable).toBe(true);
    expect(err.message).toContain('HTTP 503');
    expect(audioBytes(await collect(tts, pieces('Hello.')))).toBe(6 * BYTES_PER_CHAR);
  });

  it('times out when the vendor goes silent', async () => {
    emulator.faults.next({ kind: 'stall' });
    const tts = createCartesiaTts(settings({ serviceOptions: { base_url: server.url, timeout_ms: 150 } }));
    // The vendor never answers, so only the 150 ms timeout can end the reply.
    const err = await failure(collect(tts, pieces('Hello.')));
    expect(err.retryable).toBe(true);
    expect(err.message).toBe('cartesia: no audio within 150 ms');
    // The silent socket was dropped; the next reply reconnects.
    expect(audioBytes(await collect(tts, pieces('Hi.')))).toBe(3 * BYTES_PER_CHAR);
    expect(emulator.connections).toHaveLength(2);
  });

  it('turns a vendor error message into a ProviderError', async () => {
    emulator.faults.next({ kind: 'error' });
    const tts = createCartesiaTts(settings());
    const err = await failure(collect(tts, pieces('Hello.')));
    expect(err.message).toBe('cartesia: error 500: Internal server error: emulated failure (internal_error)');
    expect(err.retryable).toBe(true);
  });

  it('reports a bad request as a non-retryable error', async () => {
    const tts = createCartesiaTts(settings({ serviceOptions: { base_url: server.url, max_buffer_delay_ms: 99_999 } }));
    const err = await failure(collect(tts, pieces('Hello.')));
    expect(err.retryable).toBe(false);
    expect(err.message).toMatch(/^cartesia: error 400: Invalid request: max_buffer_delay_ms/);
  });

  it('skips malformed and unknown messages', async () => {
    emulator.faults.next({ kind: 'malformed' });
    const tts = createCartesiaTts(settings());
    const outputs = await collect(tts, pieces('Still fine.'));
    expect(audioBytes(outputs)).toBe(11 * BYTES_PER_CHAR);
    expect(spoken(outputs).join(' ')).toBe('Still fine.');
  });

  it('fails retryably when the socket drops mid-reply', async () => {
    await start({ latencies: { ttsFirstByteMs: 2, ttsRealTimeFactor: 1 } });
    emulator.faults.next({ kind: 'drop', afterMs: 100 });
    const tts = createCartesiaTts(settings());
    const err = await failure(
      collect(tts, pieces('A sentence long enough to still be playing when the socket drops.')),
    );
    expect(err.retryable).toBe(true);
    expect(err.message).toContain('closed the connection (code 1006)');
  });

  it('maps voice, model, language and speed, and passes service_options extras through', async () => {
    const tts = createCartesiaTts(
      settings({
        options: { voice: 'voice-123', model: 'sonic-3', language: 'de', speed: 1.2, text_filter: 'markdown' },
        serviceOptions: {
          base_url: server.url,
          cartesia_version: '2026-03-01',
          generation_config: { emotion: 'calm' },
          pronunciation_dict_id: 'dict-1',
          max_buffer_delay_ms: 250,
        },
      }),
    );
    await collect(tts, pieces('Guten Tag.'));
    expect(emulator.connections[0]!.version).toBe('2026-03-01');
    const request = emulator.contexts[0]!.requests[0]!;
    expect(request).toMatchObject({
      model_id: 'sonic-3',
      voice: { mode: 'id', id: 'voice-123' },
      language: 'de',
      generation_config: { emotion: 'calm', speed: 1.2 },
      pronunciation_dict_id: 'dict-1',
      max_buffer_delay_ms: 250,
    });
    expect(request).not.toHaveProperty('base_url');
    expect(request).not.toHaveProperty('cartesia_version');
  });

  it('finds the endpoint in SWITCHBOARD_CARTESIA_URL when the bot sets none', async () => {
    const tts = createCartesiaTts(settings({ serviceOptions: {}, env: { SWITCHBOARD_CARTESIA_URL: server.url } }));
    expect(audioBytes(await collect(tts, pieces('Hi.')))).toBe(3 * BYTES_PER_CHAR);
  });

  it('needs a key, and says where to put it', () => {
    expect(() => createCartesiaTts(settings({ apiKey: undefined }))).toThrow(
      'cartesia: no API key: set api_keys.cartesia in the bot configuration or CARTESIA_API_KEY on the server',
    );
  });

  it('rejects options of the wrong type', () => {
    expect(() => createCartesiaTts(settings({ options: { voice: 7 } }))).toThrow(
      /cartesia: invalid tts options: voice/,
    );
    expect(() => createCartesiaTts(settings({ serviceOptions: { timeout_ms: 'soon' } }))).toThrow(
      /invalid service_options.cartesia: timeout_ms/,
    );
  });
});
