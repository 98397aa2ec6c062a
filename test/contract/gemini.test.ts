import { GoogleGenAI, type LiveServerMessage, Modality } from '@google/genai';
import { afterEach, describe, expect, it } from 'vitest';
import { GeminiEmulator } from '../../src/tools/emulators/gemini-emulator.js';
import { GeminiLiveEmulator } from '../../src/tools/emulators/gemini-live-emulator.js';
import { API_KEY, type Vendors, startVendors } from './vendors.js';

/**
 * Google's own SDK (`@google/genai`) against the Gemini emulators: `generateContentStream` over
 * HTTP (SSE) and Live (`ai.live.connect`) over its websocket. Both follow `httpOptions.baseUrl`;
 * Live turns an http:// base into ws:// (getWebsocketBaseUrl).
 */

const REPLY = 'Sure, a table for two at seven.';

let vendors: Vendors | undefined;
afterEach(async () => {
  await vendors?.close();
  vendors = undefined;
});

function client(v: Vendors): GoogleGenAI {
  return new GoogleGenAI({ apiKey: API_KEY, httpOptions: { baseUrl: v.baseUrl } });
}

describe('@google/genai against the Gemini emulators', () => {
  it('generateContentStream: text chunks, the finish reason and usage metadata', async () => {
    vendors = await startVendors({ replies: [REPLY] });
    const stream = await client(vendors).models.generateContentStream({
      model: 'gemini-2.5-flash',
      contents: [{ role: 'user', parts: [{ text: 'A table for two, please.' }] }],
      config: { systemInstruction: 'You are a receptionist.', temperature: 0.5, maxOutputTokens: 256 },
    });
    const texts: string[] = [];
    const finishReasons: string[] = [];
    let usage: { promptTokenCount?: number; candidatesTokenCount?: number; totalTokenCount?: number } | undefined;
    for await (const chunk of stream) {
      if (chunk.text) texts.push(chunk.text);
      const reason = chunk.candidates?.[0]?.finishReason;
      if (reason) finishReasons.push(reason);
      if (chunk.usageMetadata) usage = chunk.usageMetadata;
    }
    expect(texts.length).toBeGreaterThan(1);
    expect(texts.join('')).toBe(REPLY);
    expect(finishReasons).toEqual(['STOP']);
    expect(usage?.promptTokenCount).toBeGreaterThan(0);
    expect(usage?.candidatesTokenCount).toBeGreaterThan(0);
    expect(usage?.totalTokenCount).toBe((usage?.promptTokenCount ?? 0) + (usage?.candidatesTokenCount ?? 0));
    const recorded = vendors.emulator(GeminiEmulator).requests.at(-1)!;
    expect(recorded.status).toBe(200);
    expect(recorded.path).toContain('/models/gemini-2.5-flash:streamGenerateContent');
  });

  it('Live: connect, send a text turn, receive the spoken answer, its transcription and turnComplete', async () => {
    vendors = await startVendors({ replies: [REPLY] });
    const messages: LiveServerMessage[] = [];
    let turnComplete!: () => void;
    const turnDone = new Promise<void>((resolve) => (turnComplete = resolve));
    const errors: unknown[] = [];
    let closeCode: number | undefined;
    const session = await client(vendors).live.connect({
      model: 'gemini-live-2.5-flash-preview',
      config: {
        responseModalities: [Modality.AUDIO],
        outputAudioTranscription: {},
        systemInstruction: 'You are a receptionist.',
      },
      callbacks: {
        onmessage: (message) => {
          messages.push(message);
          if (message.serverContent?.turnComplete) turnComplete();
        },
        onerror: (event) => errors.push(event),
        onclose: (event) => {
          closeCode = event.code;
        },
      },
    });
    session.sendClientContent({
      turns: [{ role: 'user', parts: [{ text: 'A table for two, please.' }] }],
      turnComplete: true,
    });
    await turnDone;
    session.close();
    expect(errors).toEqual([]);
    expect(closeCode).toBeUndefined();

    expect(messages[0]?.setupComplete).toBeDefined();
    let audioBytes = 0;
    const mimeTypes = new Set<string>();
    for (const message of messages) {
      for (const part of message.serverContent?.modelTurn?.parts ?? []) {
        if (!part.inlineData?.data) continue;
        audioBytes += Buffer.from(part.inlineData.data, 'base64').length;
        mimeTypes.add(part.inlineData.mimeType ?? '');
      }
    }
    // 60 ms of emulated speech per character, 24 kHz PCM16.
    expect(audioBytes).toBe(REPLY.length * 60 * 24 * 2);
    expect([...mimeTypes]).toEqual(['audio/pcm;rate=24000']);
    const transcription = messages.map((m) => m.serverContent?.outputTranscription?.text ?? '').join('');
    expect(transcription).toBe(REPLY);
    expect(messages.some((m) => m.serverContent?.generationComplete)).toBe(true);
    expect(messages.at(-1)?.serverContent?.turnComplete).toBe(true);

    const recorded = vendors.emulator(GeminiLiveEmulator).connections.at(-1)!;
    expect(recorded.setup).toMatchObject({ model: 'models/gemini-live-2.5-flash-preview' });
  });
});
