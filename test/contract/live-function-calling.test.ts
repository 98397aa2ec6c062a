import { GoogleGenAI, type LiveServerMessage, Modality } from '@google/genai';
import { afterEach, describe, expect, it } from 'vitest';
import { GeminiLiveEmulator } from '../../src/tools/emulators/gemini-live-emulator.js';
import { API_KEY, CONTRACT_LATENCIES, type Vendors, startVendors } from './vendors.js';

/** Gemini Live function calling as Google's SDK sees it: `toolCall` in, `sendToolResponse` out, the answer. */

let vendors: Vendors | undefined;
afterEach(async () => {
  await vendors?.close();
  vendors = undefined;
});

describe('@google/genai Live against the emulator: function calls', () => {
  it('parallel functionCalls with ids, one toolResponse answering them, then the spoken answer', async () => {
    const emulator = new GeminiLiveEmulator({
      latencies: CONTRACT_LATENCIES,
      apiKey: API_KEY,
      replies: [
        {
          toolCalls: [
            { name: 'check_table', argumentsJson: '{"people":2}' },
            { name: 'get_hours', argumentsJson: '{}' },
          ],
        },
      ],
      afterToolResults: (results) => `Done ${results.map((r) => r.name).join(' ')}`,
    });
    vendors = await startVendors({ emulators: [emulator] });
    const ai = new GoogleGenAI({ apiKey: API_KEY, httpOptions: { baseUrl: vendors.baseUrl } });
    const messages: LiveServerMessage[] = [];
    let onToolCall!: (message: LiveServerMessage) => void;
    const toolCall = new Promise<LiveServerMessage>((resolve) => (onToolCall = resolve));
    let turnComplete!: () => void;
    const turnDone = new Promise<void>((resolve) => (turnComplete = resolve));
    const session = await ai.live.connect({
      model: 'gemini-live-2.5-flash-preview',
      config: {
        responseModalities: [Modality.AUDIO],
        outputAudioTranscription: {},
        tools: [
          {
            functionDeclarations: [
              {
                name: 'check_table',
                parametersJsonSchema: { type: 'object', properties: { people: { type: 'integer' } } },
              },
              { name: 'get_hours', parametersJsonSchema: { type: 'object', properties: {} } },
            ],
          },
        ],
      },
      callbacks: {
        onmessage: (message) => {
          messages.push(message);
          if (message.toolCall) onToolCall(message);
          if (message.serverContent?.turnComplete) turnComplete();
        },
      },
    });
    session.sendClientContent({ turns: [{ role: 'user', parts: [{ text: 'Table for two?' }] }], turnComplete: true });
    const calls = (await toolCall).toolCall?.functionCalls ?? [];
    expect(calls.map((c) => [c.name, c.args])).toEqual([
      ['check_table', { people: 2 }],
      ['get_hours', {}],
    ]);
    expect(calls.every((c) => typeof c.id === 'string' && c.id.length > 0)).toBe(true);
    session.sendToolResponse({
      functionResponses: calls.map((c) => ({ id: c.id, name: c.name, response: { ok: true } })),
    });
    await turnDone;
    session.close();
    const transcription = messages.map((m) => m.serverContent?.outputTranscription?.text ?? '').join('');
    expect(transcription).toBe('Done check_table get_hours');
    const recorded = emulator.connections.at(-1)!;
    expect(recorded.toolResponses.map((r) => r.id)).toEqual(calls.map((c) => c.id));
    expect(recorded.closeCode ?? 1000).toBe(1000);
  });
});
