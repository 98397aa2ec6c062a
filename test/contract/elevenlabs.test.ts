import { ElevenLabsClient } from '@elevenlabs/elevenlabs-js';
import * as serialization from '@elevenlabs/elevenlabs-js/serialization/index.js';
import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { ElevenLabsEmulator } from '../../src/tools/emulators/elevenlabs-emulator.js';
import { API_KEY, type Vendors, startVendors } from './vendors.js';

/**
 * ElevenLabs' own SDK (`@elevenlabs/elevenlabs-js`) against the ElevenLabs emulator.
 *
 * The SDK streams text-to-speech over HTTP (`textToSpeech.stream`, `textToSpeech.convert`); it
 * has no client for the multi-context websocket (`multi-stream-input`) that the adapter uses. For
 * that socket the test uses the SDK's own wire schemas (its `serialization` module, the same
 * code the SDK parses and writes its messages with): client messages are written by them and
 * every server message must parse with them, unknown keys refused.
 */

const VOICE_ID = 'JBFqnCBsd6RMkjVDRZzb';
const MODEL_ID = 'eleven_flash_v2_5';

let vendors: Vendors | undefined;
afterEach(async () => {
  await vendors?.close();
  vendors = undefined;
});

async function byteCount(stream: ReadableStream<Uint8Array>): Promise<{ bytes: number; chunks: number }> {
  let bytes = 0;
  let chunks = 0;
  for await (const chunk of stream as unknown as AsyncIterable<Uint8Array>) {
    bytes += chunk.length;
    chunks += 1;
  }
  return { bytes, chunks };
}

describe('@elevenlabs/elevenlabs-js against the ElevenLabs emulator', () => {
  it('textToSpeech.stream: the audio of the text, in the requested format, in several chunks', async () => {
    vendors = await startVendors();
    const client = new ElevenLabsClient({ apiKey: API_KEY, baseUrl: vendors.baseUrl, maxRetries: 0 });
    const text = 'Hello there, how can I help?';
    const audio = await client.textToSpeech.stream(VOICE_ID, { text, modelId: MODEL_ID, outputFormat: 'ulaw_8000' });
    const { bytes, chunks } = await byteCount(audio);
    // 60 ms of emulated speech per character, mu-law at 8 kHz: one byte a sample.
    expect(bytes).toBe(text.length * 60 * 8);
    expect(chunks).toBeGreaterThan(1);

    const recorded = vendors.emulator(ElevenLabsEmulator).speechRequests.at(-1)!;
    expect(recorded).toMatchObject({ voiceId: VOICE_ID, streaming: true, status: 200, audioBytes: bytes });
    expect(recorded.body).toMatchObject({ text, model_id: MODEL_ID });
    expect(recorded.headers['xi-api-key']).toBe('[redacted]');
  });

  it('textToSpeech.convert: the whole text as pcm; a wrong key and a format the emulator cannot make are refused', async () => {
    vendors = await startVendors();
    const client = new ElevenLabsClient({ apiKey: API_KEY, baseUrl: vendors.baseUrl, maxRetries: 0 });
    const text = 'Goodbye.';
    const { bytes } = await byteCount(
      await client.textToSpeech.convert(VOICE_ID, { text, modelId: MODEL_ID, outputFormat: 'pcm_16000' }),
    );
    expect(bytes).toBe(text.length * 60 * 16 * 2);
    expect(vendors.emulator(ElevenLabsEmulator).speechRequests.at(-1)).toMatchObject({ streaming: false, status: 200 });

    await expect(
      client.textToSpeech.stream(VOICE_ID, { text, modelId: MODEL_ID, outputFormat: 'mp3_44100_128' }),
    ).rejects.toMatchObject({ statusCode: 400 });
    const wrongKey = new ElevenLabsClient({ apiKey: 'not-the-key', baseUrl: vendors.baseUrl, maxRetries: 0 });
    await expect(wrongKey.textToSpeech.stream(VOICE_ID, { text, outputFormat: 'ulaw_8000' })).rejects.toMatchObject({
      statusCode: 401,
    });
  });

  it('multi-stream-input: messages written with the SDK schemas are served, and every answer parses with them', async () => {
    vendors = await startVendors();
    const url = `${vendors.baseUrl.replace(/^http/, 'ws')}/v1/text-to-speech/${VOICE_ID}/multi-stream-input?model_id=${MODEL_ID}&output_format=ulaw_8000`;
    const ws = new WebSocket(url, { headers: { 'xi-api-key': API_KEY } });
    const strict = { unrecognizedObjectKeys: 'fail' as const, breadcrumbsPrefix: ['server message'] };
    const audio: serialization.AudioOutputMulti.Raw[] = [];
    let audioBytes = 0;
    const chars: string[] = [];
    let resolveFinal!: (contextId: string | undefined) => void;
    const final = new Promise<string | undefined>((resolve) => (resolveFinal = resolve));
    ws.on('message', (data) => {
      const json = JSON.parse(String(data)) as Record<string, unknown>;
      if ('isFinal' in json) {
        resolveFinal(serialization.FinalOutputMulti.parseOrThrow(json, strict).contextId);
        return;
      }
      const message = serialization.AudioOutputMulti.parseOrThrow(json, strict);
      audio.push(json as unknown as serialization.AudioOutputMulti.Raw);
      audioBytes += Buffer.from(message.audio, 'base64').length;
      chars.push(...(message.alignment?.chars ?? []));
    });
    const closed = new Promise<number>((resolve) => ws.on('close', (code) => resolve(code)));
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('error', reject);
    });

    const contextId = 'turn-1';
    const sendJson = (raw: unknown) => ws.send(JSON.stringify(raw));
    sendJson(
      serialization.InitialiseContext.jsonOrThrow({
        text: ' ',
        contextId,
        voiceSettings: { stability: 0.5, similarityBoost: 0.8 },
      }),
    );
    sendJson(serialization.SendTextMulti.jsonOrThrow({ text: 'Hello there. ', contextId }));
    sendJson(serialization.SendTextMulti.jsonOrThrow({ text: 'How are you?', contextId }));
    sendJson(serialization.FlushContext.jsonOrThrow({ contextId, flush: true }));
    sendJson(serialization.CloseContext.jsonOrThrow({ contextId, closeContext: true }));
    expect(await final).toBe(contextId);
    sendJson(serialization.CloseSocket.jsonOrThrow({ closeSocket: true }));
    expect(await closed).toBe(1000);

    expect(audio.length).toBeGreaterThan(1);
    for (const message of audio) expect(message.contextId).toBe(contextId);
    expect(chars.join('').trim()).toBe('Hello there. How are you?');
    // Each aligned character is 60 ms of mu-law at 8 kHz.
    expect(audioBytes).toBe(chars.length * 60 * 8);
    const recorded = vendors.emulator(ElevenLabsEmulator).context(contextId)!;
    expect(recorded.texts).toEqual(['Hello there. ', 'How are you?']);
    expect(recorded.final).toBe(true);
  });
});
