import OpenAI from 'openai';
import { OpenAIRealtimeWS } from 'openai/realtime/ws';
import { afterEach, describe, expect, it } from 'vitest';
import { encodeMulaw } from '../../src/audio/mulaw.js';
import { OpenAiEmulator } from '../../src/tools/emulators/openai-emulator.js';
import { OpenAiRealtimeEmulator } from '../../src/tools/emulators/openai-realtime-emulator.js';
import { OpenAiTtsEmulator } from '../../src/tools/emulators/openai-tts-emulator.js';
import { API_KEY, CONTRACT_LATENCIES, type Vendors, startVendors } from './vendors.js';

/**
 * OpenAI's own SDK (`openai`) against the OpenAI emulators: chat completions streaming (plain and
 * with the SDK's stream helper, text and tool calls), speech, and Realtime over the SDK's
 * `OpenAIRealtimeWS`.
 *
 * Realtime cannot be pointed at a plain-text server by configuration alone: the SDK builds its
 * URL from `baseURL` and then forces the scheme to `wss:` (openai/realtime/internal-base,
 * buildRealtimeURL). It passes its `options` through to `ws`, so the test gives `ws` a
 * `createConnection` that opens plain TCP to the emulator; everything above the socket (URL,
 * headers, handshake, events) is the SDK's own.
 */

const REPLY = 'Sure, a table for two at seven.';

let vendors: Vendors | undefined;
afterEach(async () => {
  await vendors?.close();
  vendors = undefined;
});

function client(v: Vendors): OpenAI {
  return new OpenAI({ apiKey: API_KEY, baseURL: `${v.baseUrl}/v1`, maxRetries: 0 });
}

describe('openai against the OpenAI emulators', () => {
  it('chat completions: streamed tokens, the finish reason and usage as the SDK parses them', async () => {
    vendors = await startVendors({ replies: [REPLY] });
    const stream = await client(vendors).chat.completions.create({
      model: 'gpt-4o-mini',
      messages: [
        { role: 'system', content: 'You are a receptionist.' },
        { role: 'user', content: 'A table for two, please.' },
      ],
      stream: true,
      stream_options: { include_usage: true },
    });
    const tokens: string[] = [];
    const finishReasons: string[] = [];
    let usage: OpenAI.CompletionUsage | undefined | null;
    const ids = new Set<string>();
    for await (const chunk of stream) {
      ids.add(chunk.id);
      expect(chunk.object).toBe('chat.completion.chunk');
      const choice = chunk.choices[0];
      if (choice?.delta.content) tokens.push(choice.delta.content);
      if (choice?.finish_reason) finishReasons.push(choice.finish_reason);
      if (chunk.usage) usage = chunk.usage;
    }
    expect(tokens.length).toBeGreaterThan(1);
    expect(tokens.join('')).toBe(REPLY);
    expect(finishReasons).toEqual(['stop']);
    expect(ids.size).toBe(1);
    expect(usage?.completion_tokens).toBeGreaterThan(0);
    expect(usage?.total_tokens).toBe((usage?.prompt_tokens ?? 0) + (usage?.completion_tokens ?? 0));
    const recorded = vendors.emulator(OpenAiEmulator).requests.at(-1)!;
    expect(recorded.status).toBe(200);
    expect(recorded.headers.authorization).toBe('[redacted]');
  });

  it('chat completions: the stream helper assembles streamed tool-call fragments into a call', async () => {
    const args = { party_size: 2, time: '19:00', name: 'Ada Lovelace' };
    vendors = await startVendors({
      emulators: [
        new OpenAiEmulator({
          latencies: CONTRACT_LATENCIES,
          apiKey: API_KEY,
          replies: [
            { text: 'Booking that now.', toolCalls: [{ name: 'book_table', argumentsJson: JSON.stringify(args) }] },
          ],
        }),
      ],
    });
    const runner = client(vendors).chat.completions.stream({
      model: 'gpt-4o-mini',
      messages: [{ role: 'user', content: 'Book a table for two at seven for Ada Lovelace.' }],
      tools: [
        {
          type: 'function',
          function: {
            name: 'book_table',
            description: 'Books a table',
            parameters: {
              type: 'object',
              properties: { party_size: { type: 'integer' }, time: { type: 'string' }, name: { type: 'string' } },
              required: ['party_size', 'time'],
            },
          },
        },
      ],
    });
    const argumentDeltas: string[] = [];
    runner.on('tool_calls.function.arguments.delta', (event) => argumentDeltas.push(event.arguments_delta));
    const completion = await runner.finalChatCompletion();
    const choice = completion.choices[0]!;
    expect(choice.finish_reason).toBe('tool_calls');
    expect(choice.message.content).toBe('Booking that now.');
    expect(choice.message.tool_calls).toHaveLength(1);
    const call = choice.message.tool_calls![0]!;
    expect(call.type).toBe('function');
    if (call.type !== 'function') return;
    expect(call.id).toMatch(/^call_/);
    expect(call.function.name).toBe('book_table');
    expect(JSON.parse(call.function.arguments)).toEqual(args);
    expect(argumentDeltas.length).toBeGreaterThan(1);
  });

  it('speech: the SDK streams the pcm audio of the text', async () => {
    vendors = await startVendors();
    const text = 'Hello there, how can I help?';
    const response = await client(vendors).audio.speech.create({
      model: 'gpt-4o-mini-tts',
      voice: 'alloy',
      input: text,
      response_format: 'pcm',
    });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('audio/pcm');
    let bytes = 0;
    let chunks = 0;
    for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
      bytes += chunk.length;
      chunks += 1;
    }
    // 60 ms of emulated speech per character, 24 kHz, 2 bytes a sample.
    expect(bytes).toBe(text.length * 60 * 24 * 2);
    expect(chunks).toBeGreaterThan(1);
    expect(vendors.emulator(OpenAiTtsEmulator).requests.at(-1)!.body).toMatchObject({
      model: 'gpt-4o-mini-tts',
      voice: 'alloy',
      input: text,
      response_format: 'pcm',
    });
  });

  it('realtime: OpenAIRealtimeWS configures a session, asks for a response, then speaks and gets its words transcribed and answered', async () => {
    vendors = await startVendors({ replies: [REPLY] });
    const v = vendors;
    const rt = new OpenAIRealtimeWS(
      { model: 'gpt-realtime', options: { createConnection: () => v.plainSocket() } },
      client(v),
    );
    const events: Array<{ type: string } & Record<string, unknown>> = [];
    const errors: unknown[] = [];
    rt.on('event', (event) => events.push(event as unknown as (typeof events)[number]));
    rt.on('error', (err) => errors.push(err));
    const created = new Promise((resolve) => rt.on('session.created', resolve));
    await created;
    rt.send({
      type: 'session.update',
      session: {
        type: 'realtime',
        output_modalities: ['audio'],
        audio: { input: { format: { type: 'audio/pcmu' } }, output: { format: { type: 'audio/pcmu' } } },
      },
    });
    rt.send({
      type: 'conversation.item.create',
      item: { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'A table for two, please.' }] },
    });
    const done = new Promise<OpenAI.Realtime.ResponseDoneEvent>((resolve) => rt.on('response.done', resolve));
    rt.send({ type: 'response.create' });
    const responseDone = await done;

    // The caller speaks: 400 ms of tone, then silence until the server's VAD ends the turn.
    const answered = new Promise<OpenAI.Realtime.ResponseDoneEvent>((resolve) => rt.on('response.done', resolve));
    const pcm = new Int16Array(8000 * 1.4);
    for (let i = 0; i < 8000 * 0.4; i++) pcm[i] = Math.round(8000 * Math.sin((2 * Math.PI * 440 * i) / 8000));
    const mulaw = Buffer.from(encodeMulaw(pcm));
    for (let at = 0; at < mulaw.length; at += 160)
      rt.send({ type: 'input_audio_buffer.append', audio: mulaw.subarray(at, at + 160).toString('base64') });
    const secondDone = await answered;
    expect(secondDone.response.status).toBe('completed');
    const closed = new Promise<number>((resolve) => rt.socket.once('close', (code: number) => resolve(code)));
    rt.close();
    expect(await closed).toBe(1000);
    expect(errors).toEqual([]);

    expect(responseDone.response.status).toBe('completed');
    // Where the SDK's types require a field or forbid null, the emulator keeps to them.
    expect(events[0]).toMatchObject({ type: 'session.created', session: { type: 'realtime' } });
    expect(responseDone.response.usage).not.toBeNull();
    const types = events.map((e) => e.type);
    const turn = types.slice(types.indexOf('input_audio_buffer.speech_started'));
    expect(turn.slice(0, 5)).toEqual([
      'input_audio_buffer.speech_started',
      'input_audio_buffer.speech_stopped',
      'input_audio_buffer.committed',
      'conversation.item.input_audio_transcription.completed',
      'response.created',
    ]);
    const transcribed = events.find((e) => e.type === 'conversation.item.input_audio_transcription.completed')!;
    expect(transcribed).toMatchObject({
      transcript: 'hello',
      content_index: 0,
      usage: { type: 'duration', seconds: 0.4 },
    });
    expect(transcribed.item_id).toBe(events.find((e) => e.type === 'input_audio_buffer.committed')!.item_id);
    expect(types.slice(0, 3)).toEqual(['session.created', 'session.updated', 'conversation.item.added']);
    expect(types.indexOf('response.created')).toBeLessThan(types.indexOf('response.output_audio.delta'));
    let audioBytes = 0;
    for (const event of events)
      if (event.type === 'response.output_audio.delta')
        audioBytes += Buffer.from(event.delta as string, 'base64').length;
    // 60 ms of emulated speech per character, mu-law at 8 kHz: one byte a sample; two responses.
    expect(audioBytes).toBe(2 * REPLY.length * 60 * 8);
    const transcript = events.find((e) => e.type === 'response.output_audio_transcript.done');
    expect(transcript?.transcript).toBe(REPLY);
    const recorded = vendors.emulator(OpenAiRealtimeEmulator).connections.at(-1)!;
    expect(recorded.model).toBe('gpt-realtime');
    expect(recorded.protocol).toBe('ga');
  });
});
