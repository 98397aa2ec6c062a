import { GoogleGenAI, type LiveServerMessage, Modality } from '@google/genai';
import OpenAI from 'openai';
import { OpenAIRealtimeWS } from 'openai/realtime/ws';
import { afterEach, describe, expect, it } from 'vitest';
import { GeminiLiveEmulator } from '../../src/tools/emulators/gemini-live-emulator.js';
import { OpenAiRealtimeEmulator } from '../../src/tools/emulators/openai-realtime-emulator.js';
import { API_KEY, CONTRACT_LATENCIES, type Vendors, startVendors } from './vendors.js';

/**
 * Speech-to-speech function calling as the vendors' SDKs see it: Gemini Live's `toolCall` and
 * `sendToolResponse`, OpenAI Realtime's function_call items and function_call_output (the SDK's
 * socket reaches the plain-text emulator as in openai.test.ts).
 */

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

describe('openai OpenAIRealtimeWS against the emulator: function calls', () => {
  it('function_call items with streamed arguments, function_call_output items and one response.create, then the answer', async () => {
    const emulator = new OpenAiRealtimeEmulator({
      latencies: CONTRACT_LATENCIES,
      apiKey: API_KEY,
      replies: [
        {
          toolCalls: [
            { name: 'check_table', argumentsJson: '{"people":2,"time":"19:00"}' },
            { name: 'get_hours', argumentsJson: '{}' },
          ],
        },
      ],
      afterToolResults: (results) => `Done ${results.map((r) => r.name).join(' ')}`,
    });
    vendors = await startVendors({ emulators: [emulator] });
    const v = vendors;
    const rt = new OpenAIRealtimeWS(
      { model: 'gpt-realtime', options: { createConnection: () => v.plainSocket() } },
      new OpenAI({ apiKey: API_KEY, baseURL: `${v.baseUrl}/v1`, maxRetries: 0 }),
    );
    const errors: unknown[] = [];
    rt.on('error', (err) => errors.push(err));
    const argumentDeltas: string[] = [];
    rt.on('response.function_call_arguments.delta', (event) => argumentDeltas.push(event.delta));
    const items: OpenAI.Realtime.RealtimeConversationItemFunctionCall[] = [];
    rt.on('response.output_item.done', (event) => {
      if (event.item.type === 'function_call') items.push(event.item);
    });
    await new Promise((resolve) => rt.on('session.created', resolve));
    rt.send({
      type: 'session.update',
      session: {
        type: 'realtime',
        tools: [
          { type: 'function', name: 'check_table', parameters: { type: 'object', properties: {} } },
          { type: 'function', name: 'get_hours', parameters: { type: 'object', properties: {} } },
        ],
      },
    });
    rt.send({
      type: 'conversation.item.create',
      item: { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Table for two?' }] },
    });
    const first = new Promise<OpenAI.Realtime.ResponseDoneEvent>((resolve) => rt.on('response.done', resolve));
    rt.send({ type: 'response.create' });
    await first;
    expect(items.map((item) => [item.name, JSON.parse(item.arguments)])).toEqual([
      ['check_table', { people: 2, time: '19:00' }],
      ['get_hours', {}],
    ]);
    expect(argumentDeltas.join('')).toBe('{"people":2,"time":"19:00"}{}');
    for (const item of items)
      rt.send({
        type: 'conversation.item.create',
        item: { type: 'function_call_output', call_id: item.call_id ?? '', output: '{"ok":true}' },
      });
    const transcript = new Promise<string>((resolve) =>
      rt.on('response.output_audio_transcript.done', (event) => resolve(event.transcript)),
    );
    rt.send({ type: 'response.create' });
    expect(await transcript).toBe('Done check_table get_hours');
    rt.close();
    expect(errors).toEqual([]);
    expect(emulator.connections.at(-1)!.toolOutputs.map((o) => o.callId)).toEqual(items.map((i) => i.call_id));
  });
});
