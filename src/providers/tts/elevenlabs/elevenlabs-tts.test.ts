import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import WebSocket from 'ws';
import { ElevenLabsEmulator, type ElevenLabsEmulatorOptions } from '../../../tools/emulators/elevenlabs-emulator.js';
import { type RunningEmulators, startEmulatorServer } from '../../../tools/emulators/emulator-server.js';
import type { ProviderSettings } from '../../registry.js';
import type { TtsOutput } from '../../types.js';
import { DEFAULT_ELEVENLABS_VOICE_ID, createElevenLabsTts } from './index.js';
import {
  audioBytes,
  collectSpeech as collect,
  context,
  pieces,
  providerFailure as failure,
  spoken,
  TextFeed,
  EMULATOR_ENV,
} from '../../../../test/helpers/provider-kit.js';

const KEY = 'xi_test_0123456789';
const FAST = { ttsFirstByteMs: 2, ttsRealTimeFactor: 50 };
/** 8 kHz mu-law bytes per character of emulated speech (60 ms each). */
const BYTES_PER_CHAR = 480;

let server: RunningEmulators;
let emulator: ElevenLabsEmulator;

async function start(options: ElevenLabsEmulatorOptions = {}): Promise<void> {
  await server?.close();
  emulator = new ElevenLabsEmulator({ latencies: FAST, apiKey: KEY, ...options });
  server = await startEmulatorServer([emulator]);
}

beforeEach(() => start());
afterEach(() => server.close());

function settings(over: Partial<ProviderSettings> = {}): ProviderSettings {
  return { options: {}, apiKey: KEY, serviceOptions: { base_url: server.url }, env: EMULATOR_ENV, ...over };
}

/** A text source the test feeds by hand, like an LLM that is still talking. */
describe('ElevenLabs TTS against the emulator', () => {
  it('sends the exact handshake and context initialisation', async () => {
    const tts = createElevenLabsTts(settings());
    expect(tts.outputFormat).toEqual({ encoding: 'mulaw', sampleRateHz: 8000 });
    await collect(tts, pieces('Hello there.'));

    const connection = emulator.connections[0]!;
    expect(connection.voiceId).toBe(DEFAULT_ELEVENLABS_VOICE_ID);
    expect(connection.path.split('?')[0]).toBe(`/v1/text-to-speech/${DEFAULT_ELEVENLABS_VOICE_ID}/multi-stream-input`);
    expect(connection.query).toEqual({
      auto_mode: 'true',
      inactivity_timeout: '60',
      model_id: 'eleven_flash_v2_5',
      output_format: 'ulaw_8000',
    });
    expect(connection.headers['xi-api-key']).toBe('[redacted]');
    const contextId = emulator.contexts[0]!.contextId;
    expect(contextId).toMatch(/^sb-/);
    expect(connection.messages).toEqual([
      { text: ' ', context_id: contextId },
      { text: 'Hello there. ', context_id: contextId },
      { context_id: contextId, flush: true },
      { context_id: contextId, close_context: true },
    ]);
  });

  it('speaks a reply in one context, flushed and closed at its end', async () => {
    const tts = createElevenLabsTts(settings());
    const texts = ['Thanks for calling.', 'How can I help?', 'We open at nine.'];
    const outputs = await collect(tts, pieces(...texts));

    expect(emulator.contexts).toHaveLength(1);
    const record = emulator.contexts[0]!;
    expect(record.texts).toEqual(texts.map((t) => `${t} `));
    expect(record.flushes).toBe(1);
    expect(record.closed).toBe(true);
    expect(record.final).toBe(true);
    expect(audioBytes(outputs)).toBe(record.audioBytes);
    // Each piece is voiced with its trailing space: 60 ms (480 bytes) per character.
    expect(record.audioBytes).toBe(texts.reduce((n, t) => n + t.length + 1, 0) * BYTES_PER_CHAR);
  });

  it('reports words as spoken as the alignments confirm them, in order', async () => {
    const tts = createElevenLabsTts(settings());
    const texts = ['Thanks for calling.', 'How can I help?'];
    const outputs = await collect(tts, pieces(...texts));

    expect(spoken(outputs).join(' ')).toBe(texts.join(' '));
    expect(spoken(outputs).length).toBeGreaterThan(2);
    // A word is reported after the chunk carrying the space that ends it.
    const wordEndChars: number[] = [];
    let pieceStart = 0;
    for (const text of texts) {
      for (const match of text.matchAll(/\S+/g)) wordEndChars.push(pieceStart + match.index + match[0].length);
      pieceStart += text.length + 1;
    }
    let bytesSoFar = 0;
    let wordsSpoken = 0;
    for (const output of outputs) {
      if (output.type === 'audio') {
        bytesSoFar += output.audio.length;
        continue;
      }
      wordsSpoken += output.text.split(' ').length;
      expect(bytesSoFar).toBeGreaterThanOrEqual(wordEndChars[wordsSpoken - 1]! * BYTES_PER_CHAR);
    }
    expect(outputs.findIndex((o) => o.type === 'spoken')).toBeLessThan(outputs.map((o) => o.type).lastIndexOf('audio'));
  });

  it('reuses one socket for the replies of a call, a context per reply', async () => {
    const tts = createElevenLabsTts(settings());
    const first = await collect(tts, pieces('One.'));
    const second = await collect(tts, pieces('Two two.'));
    expect(emulator.connections).toHaveLength(1);
    expect(emulator.contexts).toHaveLength(2);
    expect(emulator.contexts[0]!.contextId).not.toBe(emulator.contexts[1]!.contextId);
    expect(audioBytes(first)).toBe(emulator.contexts[0]!.audioBytes);
    expect(audioBytes(second)).toBe(emulator.contexts[1]!.audioBytes);
  });

  it('opens the socket before the first piece arrives', async () => {
    const tts = createElevenLabsTts(settings());
    const feed = new TextFeed();
    const run = collect(tts, feed);
    await vi.waitFor(() => expect(emulator.stats.activeConnections).toBe(1));
    expect(emulator.contexts).toHaveLength(0);
    feed.push('Now.');
    feed.end();
    expect(audioBytes(await run)).toBe(5 * BYTES_PER_CHAR);
  });

  it('closes the context on barge-in, yields nothing after, and the vendor stops at once', async () => {
    await start({ latencies: { ttsFirstByteMs: 2, ttsRealTimeFactor: 2 } });
    const tts = createElevenLabsTts(settings());
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
    await vi.waitFor(() => expect(emulator.closeContexts).toEqual([record.contextId]));
    expect(record.flushes).toBe(0);
    expect(record.chunksAfterClose).toBe(0);
    await vi.waitFor(() => expect(record.final).toBe(true));

    const next = await collect(tts, pieces('Yes?'));
    expect(emulator.connections).toHaveLength(1);
    expect(audioBytes(next)).toBe(5 * BYTES_PER_CHAR);
    expect(spoken(next)).toEqual(['Yes?']);
  });

  it('ends with the text source’s own error and closes the context', async () => {
    const tts = createElevenLabsTts(settings());
    const feed = new TextFeed();
    const llmError = new Error('llm went away');
    const run = collect(tts, feed);
    feed.push('First.');
    await vi.waitFor(() => expect(emulator.contexts).toHaveLength(1));
    feed.fail(llmError);
    await expect(run).rejects.toBe(llmError);
    await vi.waitFor(() => expect(emulator.closeContexts).toHaveLength(1));
  });

  it('refuses a wrong key with a non-retryable error that does not show the key', async () => {
    const tts = createElevenLabsTts(settings({ apiKey: 'xi_wrong_key_999' }));
    const err = await failure(collect(tts, pieces('Hello.')));
    expect(err.retryable).toBe(false);
    expect(err.message).toBe('elevenlabs: handshake refused: HTTP 401: Invalid API key');
    expect(err.message).not.toContain('xi_wrong_key_999');
  });

  it('makes a 5xx handshake retryable', async () => {
    emulator.faults.next({ kind: 'reject', status: 500 });
    const tts = createElevenLabsTts(settings());
    const err = await failure(collect(tts, pieces('Hello.')));
    expect(err.retryable).toBe(true);
    expect(err.message).toContain('HTTP 500');
  });

  it('times out when the vendor goes silent, then reconnects', async () => {
    emulator.faults.next({ kind: 'stall' });
    const tts = createElevenLabsTts(settings({ serviceOptions: { base_url: server.url, timeout_ms: 150 } }));
    const err = await failure(collect(tts, pieces('Hello.')));
    expect(err.retryable).toBe(true);
    expect(err.message).toBe('elevenlabs: no audio within 150 ms');
    expect(audioBytes(await collect(tts, pieces('Hi.')))).toBe(4 * BYTES_PER_CHAR);
    expect(emulator.connections).toHaveLength(2);
  });

  it('turns a vendor error message into a ProviderError', async () => {
    emulator.faults.next({ kind: 'error' });
    const tts = createElevenLabsTts(settings());
    const err = await failure(collect(tts, pieces('Hello.')));
    expect(err.message).toBe('elevenlabs: error: internal_error: emulated failure');
    expect(err.retryable).toBe(true);
  });

  it('fails every reply on the socket, without retry, on a connection-level error and a 1008 close', async () => {
    const tts = createElevenLabsTts(settings({ serviceOptions: { base_url: server.url, inactivity_timeout: 1 } }));
    const feed = new TextFeed();
    feed.push('Hello.');
    // The LLM stalls: no text for longer than the inactivity timeout the bot asked for.
    const err = await failure(collect(tts, feed));
    expect(err.retryable).toBe(false);
    expect(err.message).toMatch(/^elevenlabs: error: input_timeout_exceeded: Have not received new text for 1 seconds/);
    await vi.waitFor(() => expect(emulator.stats.activeConnections).toBe(0));
  });

  it('skips malformed and unknown messages', async () => {
    emulator.faults.next({ kind: 'malformed' });
    const tts = createElevenLabsTts(settings());
    const outputs = await collect(tts, pieces('Still fine.'));
    expect(audioBytes(outputs)).toBe(12 * BYTES_PER_CHAR);
    expect(spoken(outputs).join(' ')).toBe('Still fine.');
  });

  it('fails retryably when the socket drops mid-reply', async () => {
    await start({ latencies: { ttsFirstByteMs: 2, ttsRealTimeFactor: 1 } });
    emulator.faults.next({ kind: 'drop', afterMs: 100 });
    const tts = createElevenLabsTts(settings());
    const err = await failure(
      collect(tts, pieces('A sentence long enough to still be playing when the socket drops.')),
    );
    expect(err.retryable).toBe(true);
    expect(err.message).toContain('closed the connection (code 1006)');
  });

  it('maps voice, model, language and speed, and passes service_options through', async () => {
    const tts = createElevenLabsTts(
      settings({
        options: {
          voice: 'voice 1/x',
          model: 'eleven_turbo_v2_5',
          language: 'de',
          speed: 1.1,
          text_filter: 'markdown',
        },
        serviceOptions: {
          base_url: `${server.url}/v1`,
          voice_settings: { stability: 0.4 },
          generation_config: { chunk_length_schedule: [50] },
          apply_text_normalization: 'on',
          enable_logging: false,
          auto_mode: false,
          output_format: 'mp3_44100_128',
        },
      }),
    );
    await collect(tts, pieces('Guten Tag.'));
    const connection = emulator.connections[0]!;
    expect(connection.voiceId).toBe('voice 1/x');
    expect(connection.query).toEqual({
      auto_mode: 'false',
      inactivity_timeout: '60',
      apply_text_normalization: 'on',
      enable_logging: 'false',
      language_code: 'de',
      model_id: 'eleven_turbo_v2_5',
      output_format: 'ulaw_8000',
    });
    expect(connection.messages[0]).toEqual({
      text: ' ',
      context_id: emulator.contexts[0]!.contextId,
      voice_settings: { stability: 0.4, speed: 1.1 },
      generation_config: { chunk_length_schedule: [50] },
    });
    expect(emulator.contexts[0]!.voiceSettings).toEqual({ stability: 0.4, speed: 1.1 });
  });

  it('sends the language only to models that take it', async () => {
    const tts = createElevenLabsTts(settings({ options: { model: 'eleven_multilingual_v2', language: 'de' } }));
    await collect(tts, pieces('Hallo.'));
    expect(emulator.connections[0]!.query.language_code).toBeUndefined();
    expect(emulator.connections[0]!.query.model_id).toBe('eleven_multilingual_v2');
  });

  it('finds the endpoint in SWITCHBOARD_ELEVENLABS_URL when the bot sets none', async () => {
    const tts = createElevenLabsTts(settings({ serviceOptions: {}, env: { SWITCHBOARD_ELEVENLABS_URL: server.url } }));
    expect(audioBytes(await collect(tts, pieces('Hi.')))).toBe(4 * BYTES_PER_CHAR);
  });

  it('needs a key, and says where to put it', () => {
    expect(() => createElevenLabsTts(settings({ apiKey: undefined }))).toThrow(
      'elevenlabs: no API key: set api_keys.elevenlabs in the bot configuration or ELEVENLABS_API_KEY on the server',
    );
  });

  it('rejects options it cannot use', () => {
    expect(() => createElevenLabsTts(settings({ options: { model: 3 } }))).toThrow(
      /elevenlabs: invalid tts options: model/,
    );
    expect(() => createElevenLabsTts(settings({ serviceOptions: { seed: { a: 1 } } }))).toThrow(
      /service_options.elevenlabs: seed: must be a string/,
    );
  });
});

describe('ElevenLabs emulator protocol rules', () => {
  async function open(
    query = 'model_id=eleven_flash_v2_5&output_format=ulaw_8000',
    headers: Record<string, string> = { 'xi-api-key': KEY },
  ): Promise<WebSocket> {
    const ws = new WebSocket(`${server.url.replace('http', 'ws')}/v1/text-to-speech/v1/multi-stream-input?${query}`, {
      headers,
    });
    await new Promise((resolve, reject) => {
      ws.once('open', resolve);
      ws.once('error', reject);
    });
    return ws;
  }

  function messages(ws: WebSocket): { list: Array<Record<string, unknown>>; closed: Promise<number> } {
    const list: Array<Record<string, unknown>> = [];
    ws.on('message', (data) => list.push(JSON.parse(data.toString()) as Record<string, unknown>));
    return { list, closed: new Promise((resolve) => ws.once('close', (code) => resolve(code))) };
  }

  it('refuses settings for a context that a keepalive started, with 1008', async () => {
    const ws = await open();
    const { list, closed } = messages(ws);
    ws.send(JSON.stringify({ text: '', context_id: 'c1' }));
    ws.send(JSON.stringify({ text: ' ', context_id: 'c1', voice_settings: { stability: 0.5 } }));
    expect(await closed).toBe(1008);
    expect(list.at(-1)).toMatchObject({ error: 'invalid_context_initialization', code: 1008 });
  });

  it('accepts the key in the first message when the header is absent, and refuses a message without one', async () => {
    const good = await open(undefined, {});
    const first = messages(good);
    good.send(JSON.stringify({ text: ' ', context_id: 'c1', xi_api_key: KEY }));
    good.send(JSON.stringify({ text: 'Hi. ', context_id: 'c1', flush: true }));
    good.send(JSON.stringify({ context_id: 'c1', close_context: true }));
    await vi.waitFor(() => expect(first.list.at(-1)).toEqual({ isFinal: true, contextId: 'c1' }));
    expect(JSON.stringify(emulator.connections[0]!.messages)).not.toContain(KEY);
    good.close();

    const bad = await open(undefined, {});
    const second = messages(bad);
    bad.send(JSON.stringify({ text: ' ', context_id: 'c1' }));
    expect(await second.closed).toBe(1008);
  });

  it('lets a flush under way finish after close_context, then sends isFinal', async () => {
    await start({ latencies: { ttsFirstByteMs: 2, ttsRealTimeFactor: 20 } });
    const ws = await open();
    const { list } = messages(ws);
    ws.send(JSON.stringify({ text: ' ', context_id: 'c1' }));
    ws.send(JSON.stringify({ text: 'Twelve chars ', context_id: 'c1', flush: true }));
    ws.send(JSON.stringify({ context_id: 'c1', close_context: true }));
    await vi.waitFor(() => expect(list.at(-1)).toEqual({ isFinal: true, contextId: 'c1' }));
    expect(emulator.contexts[0]!.audioBytes).toBe(13 * BYTES_PER_CHAR);
    const aligned = list.flatMap((m) => (m.alignment as { chars: string[] } | undefined)?.chars ?? []).join('');
    expect(aligned).toBe('Twelve chars ');
    ws.close();
  });
});
