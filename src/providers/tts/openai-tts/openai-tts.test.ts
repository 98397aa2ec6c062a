import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { type RunningEmulators, startEmulatorServer } from '../../../tools/emulators/emulator-server.js';
import { OpenAiTtsEmulator, type OpenAiTtsEmulatorOptions } from '../../../tools/emulators/openai-tts-emulator.js';
import type { ProviderSettings } from '../../registry.js';
import type { TtsOutput } from '../../types.js';
import { createOpenAiTts } from './index.js';
import {
  audioBytes,
  collectSpeech as collect,
  context,
  pieces,
  providerFailure as failure,
  TextFeed,
  EMULATOR_ENV,
} from '../../../../test/helpers/provider-kit.js';

const KEY = 'sk-test-0123456789';
const FAST = { ttsFirstByteMs: 2, ttsRealTimeFactor: 50 };
/** 24 kHz 16-bit bytes per character of emulated speech (60 ms each). */
const BYTES_PER_CHAR = 2880;

let server: RunningEmulators;
let emulator: OpenAiTtsEmulator;

async function start(options: OpenAiTtsEmulatorOptions = {}): Promise<void> {
  await server?.close();
  emulator = new OpenAiTtsEmulator({ latencies: FAST, apiKey: KEY, ...options });
  server = await startEmulatorServer([emulator]);
}

beforeEach(() => start());
afterEach(() => server.close());

function settings(over: Partial<ProviderSettings> = {}): ProviderSettings {
  return { options: {}, apiKey: KEY, serviceOptions: { base_url: server.url }, env: EMULATOR_ENV, ...over };
}

/** A text source the test feeds by hand, like an LLM that is still talking. */
describe('OpenAI TTS against the emulator', () => {
  it('sends the exact request', async () => {
    const tts = createOpenAiTts(settings());
    expect(tts.outputFormat).toEqual({ encoding: 'linear16', sampleRateHz: 24000 });
    await collect(tts, pieces('Hello there.'));

    const request = emulator.requests[0]!;
    expect(request.method).toBe('POST');
    expect(request.path).toBe('/v1/audio/speech');
    expect(request.headers.authorization).toBe('[redacted]');
    expect(request.headers['content-type']).toBe('application/json');
    expect(request.body).toEqual({
      model: 'gpt-4o-mini-tts',
      voice: 'alloy',
      input: 'Hello there.',
      response_format: 'pcm',
    });
    expect(request.status).toBe(200);
  });

  it('speaks piece by piece, in order, each piece’s audio followed by its text', async () => {
    const tts = createOpenAiTts(settings());
    const texts = ['Thanks for calling.', 'How can I help?', 'We open at nine.'];
    const outputs = await collect(tts, pieces(...texts));

    expect(emulator.requests.map((r) => (r.body as { input: string }).input)).toEqual(texts);
    // Split the outputs at each spoken marker: each run of audio is exactly its piece's bytes.
    const runs: Array<{ bytes: number; text: string }> = [];
    let bytes = 0;
    for (const output of outputs) {
      if (output.type === 'audio') {
        expect(output.audio.length % 2).toBe(0);
        bytes += output.audio.length;
      } else {
        runs.push({ bytes, text: output.text });
        bytes = 0;
      }
    }
    expect(bytes).toBe(0);
    expect(runs).toEqual(texts.map((text, i) => ({ bytes: emulator.requests[i]!.audioBytes, text })));
    expect(runs.map((r) => r.bytes)).toEqual(texts.map((t) => t.length * BYTES_PER_CHAR));
  });

  it('fetches the next pieces while one plays, at most three at once, yielding in order', async () => {
    await start({ latencies: { ttsFirstByteMs: 2, ttsRealTimeFactor: 4 } });
    const tts = createOpenAiTts(settings());
    const feed = new TextFeed();
    const texts = ['A first sentence of some length.', 'Second.', 'Third.', 'Fourth.', 'Fifth.'];
    for (const text of texts) feed.push(text);
    feed.end();
    const spoken: string[] = [];
    let checked = false;
    for await (const output of tts.synthesize(feed, context())) {
      if (output.type === 'spoken') spoken.push(output.text);
      if (output.type === 'audio' && !checked) {
        checked = true;
        await vi.waitFor(() => expect(emulator.requests).toHaveLength(3));
        await new Promise((resolve) => setTimeout(resolve, 50));
        expect(emulator.requests).toHaveLength(3);
      }
    }
    expect(spoken).toEqual(texts);
    expect(emulator.requests).toHaveLength(5);
  });

  it('cancels every request on barge-in and yields nothing after', async () => {
    await start({ latencies: { ttsFirstByteMs: 2, ttsRealTimeFactor: 2 } });
    const tts = createOpenAiTts(settings());
    const abort = new AbortController();
    const outputs: TtsOutput[] = [];
    const feed = new TextFeed();
    feed.push('This is a long first sentence that takes a while to speak.');
    feed.push('And a second one, fetched ahead.');
    for await (const output of tts.synthesize(feed, context(abort.signal))) {
      outputs.push(output);
      if (outputs.length === 2) abort.abort();
    }
    expect(outputs).toHaveLength(2);
    await vi.waitFor(() => expect(emulator.stats.abortedByClient).toBe(2));
    expect(emulator.requests.every((r) => r.abortedByClient)).toBe(true);
  });

  it('ends with the text source’s own error', async () => {
    const tts = createOpenAiTts(settings());
    const feed = new TextFeed();
    const llmError = new Error('llm went away');
    const run = collect(tts, feed);
    feed.push('First.');
    await vi.waitFor(() => expect(emulator.requests).toHaveLength(1));
    feed.fail(llmError);
    await expect(run).rejects.toBe(llmError);
  });

  it('makes no request for an empty reply', async () => {
    const tts = createOpenAiTts(settings());
    expect(await collect(tts, pieces('', ' '))).toEqual([]);
    expect(emulator.requests).toHaveLength(0);
  });

  it('refuses a wrong key with a non-retryable error that does not show the key', async () => {
    const tts = createOpenAiTts(settings({ apiKey: 'sk-wrong-key-999' }));
    const err = await failure(collect(tts, pieces('Hello.')));
    expect(err.retryable).toBe(false);
    expect(err.message).toBe('openai_tts: HTTP 401: invalid_request_error: Incorrect API key provided.');
  });

  it('makes 500 and 429 retryable, and a bad request not', async () => {
    const tts = createOpenAiTts(settings());
    emulator.faults.next({ kind: 'error' });
    const server500 = await failure(collect(tts, pieces('Hello.')));
    expect(server500.retryable).toBe(true);
    expect(server500.message).toBe(
      'openai_tts: HTTP 500: server_error: The server had an error while processing your request.',
    );

    emulator.faults.next({ kind: 'reject', status: 429 });
    expect((await failure(collect(tts, pieces('Hello.')))).retryable).toBe(true);

    const bad = createOpenAiTts(settings({ serviceOptions: { base_url: server.url, instructions: 5 } }));
    const err = await failure(collect(bad, pieces('Hello.')));
    expect(err.retryable).toBe(false);
    expect(err.message).toMatch(/^openai_tts: HTTP 400: invalid_request_error: instructions/);
  });

  it('times out when the vendor does not answer', async () => {
    emulator.faults.next({ kind: 'hang' });
    const tts = createOpenAiTts(settings({ serviceOptions: { base_url: server.url, timeout_ms: 150 } }));
    const err = await failure(collect(tts, pieces('Hello.')));
    expect(err.retryable).toBe(true);
    expect(err.message).toBe('openai_tts: no response within 150 ms');
  });

  it('fails retryably when the stream breaks mid-audio', async () => {
    await start({ latencies: { ttsFirstByteMs: 2, ttsRealTimeFactor: 1 } });
    emulator.faults.next({ kind: 'drop', afterMs: 100 });
    const tts = createOpenAiTts(settings());
    const err = await failure(
      collect(tts, pieces('A sentence long enough to still be streaming when the connection drops.')),
    );
    expect(err.retryable).toBe(true);
    expect(err.message).toMatch(/^openai_tts: stream interrupted/);
  });

  it('fails retryably when nothing listens at the endpoint', async () => {
    const url = server.url;
    await server.close();
    const tts = createOpenAiTts(settings({ serviceOptions: { base_url: url } }));
    const err = await failure(collect(tts, pieces('Hello.')));
    expect(err.retryable).toBe(true);
    expect(err.message).toMatch(/^openai_tts: request failed: .*ECONNREFUSED/);
    await start();
  });

  it('maps voice, model and speed, and passes service_options extras into the body', async () => {
    const tts = createOpenAiTts(
      settings({
        options: { voice: 'coral', model: 'tts-1', speed: 1.25, language: 'de', text_filter: 'markdown' },
        serviceOptions: {
          base_url: `${server.url}/v1`,
          instructions: 'Speak warmly.',
          response_format: 'mp3',
          stream_format: 'sse',
        },
      }),
    );
    await collect(tts, pieces('Guten Tag.'));
    expect(emulator.requests[0]!.path).toBe('/v1/audio/speech');
    expect(emulator.requests[0]!.body).toEqual({
      model: 'tts-1',
      voice: 'coral',
      speed: 1.25,
      instructions: 'Speak warmly.',
      input: 'Guten Tag.',
      response_format: 'pcm',
    });
  });

  it('finds the endpoint in SWITCHBOARD_OPENAI_URL when the bot sets none', async () => {
    const tts = createOpenAiTts(settings({ serviceOptions: {}, env: { SWITCHBOARD_OPENAI_URL: server.url } }));
    expect(audioBytes(await collect(tts, pieces('Hi.')))).toBe(3 * BYTES_PER_CHAR);
  });

  it('needs a key, and says where to put it', () => {
    expect(() => createOpenAiTts(settings({ apiKey: undefined }))).toThrow(
      'openai_tts: no API key: set api_keys.openai_tts in the bot configuration or OPENAI_API_KEY on the server',
    );
  });

  it('rejects options of the wrong type', () => {
    expect(() => createOpenAiTts(settings({ options: { speed: 9 } }))).toThrow(
      /openai_tts: invalid tts options: speed/,
    );
  });
});
