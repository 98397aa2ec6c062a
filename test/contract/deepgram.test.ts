import { DeepgramClient } from '@deepgram/sdk';
import { afterEach, describe, expect, it } from 'vitest';
import { DeepgramEmulator } from '../../src/tools/emulators/deepgram-emulator.js';
import { API_KEY, type Vendors, startVendors } from './vendors.js';

/**
 * Deepgram's own SDK (`@deepgram/sdk`) against the Deepgram emulator: live transcription on
 * `/v1/listen` and Aura text-to-speech on `/v1/speak`, both over the SDK's websocket client,
 * pointed at the emulator with `baseUrl` (an http:// base becomes ws://).
 */

const SPOKEN = 'Hello, I would like to book a table.';
const RATE_HZ = 16_000;
const FRAME_BYTES = (RATE_HZ / 50) * 2; // 20 ms of linear16

let vendors: Vendors | undefined;
afterEach(async () => {
  await vendors?.close();
  vendors = undefined;
});

/** linear16 audio: a loud tone for `toneMs`, then `silenceMs` of silence. */
function speech(toneMs: number, silenceMs: number): Buffer {
  const toneSamples = (RATE_HZ * toneMs) / 1000;
  const audio = Buffer.alloc(((toneSamples + (RATE_HZ * silenceMs) / 1000) | 0) * 2);
  for (let i = 0; i < toneSamples; i++)
    audio.writeInt16LE(Math.round(8000 * Math.sin((2 * Math.PI * 440 * i) / RATE_HZ)), i * 2);
  return audio;
}

type Message = Record<string, unknown> & { type?: string };

describe('@deepgram/sdk against the Deepgram emulator', () => {
  it('live transcription: the SDK streams audio and parses speech start, interim and final results, utterance end and metadata', async () => {
    vendors = await startVendors({ transcripts: [SPOKEN] });
    const client = new DeepgramClient({ apiKey: API_KEY, baseUrl: vendors.baseUrl });
    const socket = await client.listen.v1.connect({
      model: 'nova-3',
      encoding: 'linear16',
      sample_rate: RATE_HZ,
      interim_results: 'true',
      vad_events: 'true',
      smart_format: 'true',
      utterance_end_ms: 1000,
      reconnectAttempts: 0,
    });
    const messages: Message[] = [];
    let sawFinal!: () => void;
    const finalArrived = new Promise<void>((resolve) => (sawFinal = resolve));
    const closed = new Promise<{ code: number }>((resolve) => socket.on('close', (event) => resolve(event)));
    const errors: Error[] = [];
    socket.on('error', (err) => errors.push(err));
    socket.on('message', (message) => {
      const m = message as unknown as Message;
      messages.push(m);
      if (m.type === 'UtteranceEnd') sawFinal();
    });
    const opened = new Promise<void>((resolve) => socket.on('open', resolve));
    socket.connect();
    await opened;

    const audio = speech(1200, 1500);
    for (let at = 0; at < audio.length; at += FRAME_BYTES) socket.sendMedia(audio.subarray(at, at + FRAME_BYTES));
    await finalArrived;
    socket.sendCloseStream({ type: 'CloseStream' });
    expect((await closed).code).toBe(1000);
    expect(errors).toEqual([]);

    const types = messages.map((m) => m.type);
    expect(types[0]).toBe('SpeechStarted');
    expect(types.at(-1)).toBe('Metadata');
    const results = messages.filter((m) => m.type === 'Results') as Array<{
      is_final: boolean;
      speech_final: boolean;
      start: number;
      duration: number;
      channel_index: number[];
      channel: {
        alternatives: Array<{
          transcript: string;
          confidence: number;
          words: Array<{ word: string; punctuated_word?: string; start: number; end: number }>;
        }>;
      };
      metadata: { request_id: string; model_uuid: string; model_info: { name: string } };
    }>;
    const interims = results.filter((r) => !r.is_final);
    expect(interims.length).toBeGreaterThan(0);
    for (const interim of interims) expect(SPOKEN.startsWith(interim.channel.alternatives[0]!.transcript)).toBe(true);
    const finals = results.filter((r) => r.is_final);
    expect(finals).toHaveLength(1);
    const final = finals[0]!;
    expect(final.speech_final).toBe(true);
    expect(final.channel_index).toEqual([0, 1]);
    const alternative = final.channel.alternatives[0]!;
    expect(alternative.transcript).toBe(SPOKEN);
    expect(alternative.words.map((w) => w.punctuated_word).join(' ')).toBe(SPOKEN);
    expect(alternative.words.map((w) => w.word)).toEqual(['hello', 'i', 'would', 'like', 'to', 'book', 'a', 'table']);
    for (const word of alternative.words) expect(word.end).toBeGreaterThanOrEqual(word.start);
    expect(final.start).toBe(0);
    expect(final.duration).toBeGreaterThanOrEqual(1.2);

    const utteranceEnd = messages.find((m) => m.type === 'UtteranceEnd') as {
      channel: number[];
      last_word_end: number;
    };
    expect(utteranceEnd.channel).toEqual([0, 1]);
    expect(utteranceEnd.last_word_end).toBeCloseTo(1.2, 1);
    const metadata = messages.at(-1) as {
      request_id: string;
      duration: number;
      channels: number;
      sha256: string;
      created: string;
      transaction_key: string;
    };
    expect(metadata.request_id).toBe(final.metadata.request_id);
    expect(metadata.duration).toBeCloseTo(2.7, 5);
    expect(metadata.channels).toBe(1);
    expect(typeof metadata.sha256).toBe('string');
    expect(Number.isNaN(Date.parse(metadata.created))).toBe(false);

    const recorded = vendors.emulator(DeepgramEmulator).log.at(-1)!;
    expect(recorded.auth).toBe('token');
    expect(recorded.query).toMatchObject({ model: 'nova-3', encoding: 'linear16', sample_rate: String(RATE_HZ) });
    expect(recorded.audioBytes).toBe(audio.length);
    expect(recorded.closeStreams).toBe(1);
  });

  it('live transcription: the SDK sends Finalize; a from_finalize final answers buffered speech, and nothing answers when every word is final', async () => {
    vendors = await startVendors({ transcripts: ['first part', 'second part'] });
    const client = new DeepgramClient({ apiKey: API_KEY, baseUrl: vendors.baseUrl });
    const socket = await client.listen.v1.connect({
      model: 'nova-3',
      encoding: 'linear16',
      sample_rate: RATE_HZ,
      endpointing: 300,
      reconnectAttempts: 0,
    });
    const messages: Message[] = [];
    socket.on('message', (message) => messages.push(message as unknown as Message));
    const opened = new Promise<void>((resolve) => socket.on('open', resolve));
    socket.connect();
    await opened;
    const send = (audio: Buffer) => {
      for (let at = 0; at < audio.length; at += FRAME_BYTES) socket.sendMedia(audio.subarray(at, at + FRAME_BYTES));
    };
    const finals = () => messages.filter((m) => m.type === 'Results' && m.is_final === true);
    const until = async (done: () => boolean) => {
      while (!done()) await new Promise((resolve) => setTimeout(resolve, 10));
    };

    // Speech, then a pause long enough for endpointing: its final comes on its own.
    send(speech(600, 600));
    await until(() => finals().length === 1);
    expect(finals()[0]).toMatchObject({ speech_final: true, from_finalize: false });
    // Every word is final: a Finalize now has nothing to answer with.
    socket.sendFinalize({ type: 'Finalize' });
    // Speech with no pause after it is buffered: Finalize answers it.
    send(speech(600, 0));
    socket.sendFinalize({ type: 'Finalize' });
    await until(() => finals().length === 2);
    const answer = finals()[1] as { from_finalize: boolean; channel: { alternatives: Array<{ transcript: string }> } };
    expect(answer.from_finalize).toBe(true);
    expect(answer.channel.alternatives[0]!.transcript).toBe('second part');
    const recorded = vendors.emulator(DeepgramEmulator).log.at(-1)!;
    expect(recorded.finalizes).toBe(2);
    expect(recorded.finals.map((f) => f.fromFinalize)).toEqual([false, true]);
    socket.close();
  });

  it('Aura text-to-speech: the SDK sends Speak and Flush and receives metadata, audio and Flushed', async () => {
    vendors = await startVendors();
    const client = new DeepgramClient({ apiKey: API_KEY, baseUrl: vendors.baseUrl });
    const socket = await client.speak.v1.connect({
      model: 'aura-2-thalia-en',
      encoding: 'linear16',
      sample_rate: '24000',
      reconnectAttempts: 0,
    });
    const messages: Message[] = [];
    let audioBytes = 0;
    let flushed!: () => void;
    const flushedArrived = new Promise<void>((resolve) => (flushed = resolve));
    const closed = new Promise<{ code: number }>((resolve) => socket.on('close', (event) => resolve(event)));
    socket.on('message', (message) => {
      if (message instanceof Blob) {
        audioBytes += message.size;
        return;
      }
      const m = message as unknown as Message;
      messages.push(m);
      if (m.type === 'Flushed') flushed();
    });
    const opened = new Promise<void>((resolve) => socket.on('open', resolve));
    socket.connect();
    await opened;

    const text = 'Hello there.';
    socket.sendText({ type: 'Speak', text });
    socket.sendFlush({ type: 'Flush' });
    await flushedArrived;
    socket.sendClose({ type: 'Close' });
    expect((await closed).code).toBe(1000);

    // 60 ms of emulated speech per character, 24 kHz, 2 bytes a sample.
    expect(audioBytes).toBe(text.length * 60 * 24 * 2);
    expect(messages.map((m) => m.type)).toEqual(['Metadata', 'Flushed']);
    expect(messages[0]).toMatchObject({ model_name: 'aura-2-thalia-en' });
    expect(typeof messages[0]!.request_id).toBe('string');
    expect(messages[1]).toEqual({ type: 'Flushed', sequence_id: 0 });
    const recorded = vendors.emulator(DeepgramEmulator).log.at(-1)!;
    expect(recorded.texts).toEqual([text]);
    expect(recorded.auth).toBe('token');
  });

  it('Aura text-to-speech over REST: the SDK posts the text and reads raw mu-law, streamed; a bad key and an encoding the emulator cannot make are refused', async () => {
    vendors = await startVendors();
    const client = new DeepgramClient({ apiKey: API_KEY, baseUrl: vendors.baseUrl });
    const text = 'Hello there.';
    const response = await client.speak.v1.audio.generate({
      text,
      model: 'aura-asteria-en',
      encoding: 'mulaw',
      sample_rate: 8000,
      container: 'none',
    });
    const audio = Buffer.from(await response.arrayBuffer());
    // 60 ms of emulated speech per character, 8 kHz, one byte a sample, no header.
    expect(audio.length).toBe(text.length * 60 * 8);

    const wav = Buffer.from(await (await client.speak.v1.audio.generate({ text, sample_rate: 16000 })).arrayBuffer());
    expect(wav.subarray(0, 4).toString('ascii')).toBe('RIFF');
    expect(wav.length).toBe(44 + text.length * 60 * 16 * 2);

    const wrongKey = new DeepgramClient({ apiKey: 'wrong', baseUrl: vendors.baseUrl });
    await expect(wrongKey.speak.v1.audio.generate({ text })).rejects.toMatchObject({ statusCode: 401 });
    await expect(client.speak.v1.audio.generate({ text, encoding: 'mp3' })).rejects.toMatchObject({ statusCode: 400 });
  });
});
