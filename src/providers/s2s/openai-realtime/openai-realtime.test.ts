import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type RunningEmulators, startEmulatorServer } from '../../../tools/emulators/emulator-server.js';
import {
  OpenAiRealtimeEmulator,
  type OpenAiRealtimeEmulatorOptions,
} from '../../../tools/emulators/openai-realtime-emulator.js';
import type { ProviderSettings } from '../../registry.js';
import type { S2sSession } from '../types.js';
import { createOpenAiRealtime } from './index.js';
import {
  EMULATOR_ENV,
  context,
  providerFailure,
  startSilentServer,
  startStallingRefusal,
  until,
} from '../../../../test/helpers/provider-kit.js';
import { RecordedS2sEvents, silenceFrames, speechFrames } from '../../../../test/helpers/s2s-kit.js';

const KEY = 'sk-realtime-test-0123456789';
const FAST = { llmFirstTokenMs: 2, ttsFirstByteMs: 2, ttsRealTimeFactor: 50 };
/** 8 kHz mu-law bytes per character of emulated speech (60 ms each). */
const BYTES_PER_CHAR = 480;
const REPLY = 'Hello there.';

let server: RunningEmulators;
let emulator: OpenAiRealtimeEmulator;
let baseUrl: string;
const sessions: S2sSession[] = [];

async function start(options: OpenAiRealtimeEmulatorOptions = {}): Promise<void> {
  await server?.close();
  emulator = new OpenAiRealtimeEmulator({ latencies: FAST, apiKey: KEY, replies: [REPLY], ...options });
  server = await startEmulatorServer([emulator]);
  // A host name, as a user's configuration would have it.
  baseUrl = server.url.replace('127.0.0.1', 'localhost');
}

beforeEach(() => start());
afterEach(async () => {
  for (const session of sessions.splice(0)) await session.close();
  await server.close();
});

function settings(over: Partial<ProviderSettings> = {}): ProviderSettings {
  return { options: {}, apiKey: KEY, serviceOptions: { base_url: baseUrl }, env: EMULATOR_ENV, ...over };
}

async function open(
  options: { greet?: boolean; settings?: ProviderSettings } = {},
): Promise<{ session: S2sSession; events: RecordedS2sEvents }> {
  const events = new RecordedS2sEvents();
  const provider = createOpenAiRealtime(options.settings ?? settings());
  const history = [
    { role: 'system' as const, content: 'You are a receptionist.' },
    { role: 'user' as const, content: 'Earlier question.' },
    { role: 'assistant' as const, content: 'Earlier answer.' },
  ];
  const session = await provider.open(context(), { history, greet: options.greet ?? false }, events);
  sessions.push(session);
  return { session, events };
}

function send(session: S2sSession, frames: Uint8Array[]): void {
  for (const frame of frames) session.sendAudio(frame);
}

describe('OpenAI Realtime against the emulator', () => {
  it('configures a phone-audio session with the history, then speaks its greeting as mu-law', async () => {
    const { events } = await open({ greet: true });
    await events.until(() => events.itemsDone.length === 1 && events.botTranscripts.length === 1);

    const connection = emulator.connections[0]!;
    expect(connection.protocol).toBe('ga');
    expect(connection.model).toBe('gpt-realtime');
    const [update, ...rest] = connection.events;
    expect(update).toMatchObject({
      type: 'session.update',
      session: {
        type: 'realtime',
        instructions: 'You are a receptionist.',
        audio: {
          input: { format: { type: 'audio/pcmu' } },
          output: { format: { type: 'audio/pcmu' }, voice: 'marin' },
        },
      },
    });
    expect(rest.map((e) => e.type)).toEqual([
      'conversation.item.create',
      'conversation.item.create',
      'response.create',
    ]);
    expect(rest[1]).toMatchObject({
      item: { role: 'assistant', content: [{ type: 'output_text', text: 'Earlier answer.' }] },
    });

    const itemId = events.itemsDone[0]!;
    expect(events.audio.get(itemId)).toBe(REPLY.length * BYTES_PER_CHAR);
    expect(events.botTranscripts).toEqual([{ itemId, text: REPLY }]);
    expect(events.errors).toEqual([]);
  });

  it('speaks the beta protocol when asked: its header, g711_ulaw and its event names', async () => {
    const { events } = await open({
      greet: true,
      settings: settings({ serviceOptions: { base_url: baseUrl, protocol: 'beta' } }),
    });
    await events.until(() => events.itemsDone.length === 1 && events.botTranscripts.length === 1);

    const connection = emulator.connections[0]!;
    expect(connection.protocol).toBe('beta');
    expect(connection.model).toBe('gpt-4o-realtime-preview-2024-10-01');
    expect(connection.events[0]).toMatchObject({
      session: { input_audio_format: 'g711_ulaw', output_audio_format: 'g711_ulaw', voice: 'alloy' },
    });
    expect(events.audio.get(events.itemsDone[0]!)).toBe(REPLY.length * BYTES_PER_CHAR);
  });

  it('passes the caller audio through, and reports the speech the vendor hears and its transcript', async () => {
    const { session, events } = await open();
    send(session, speechFrames(400));
    await events.until(() => events.speechStarts === 1);
    send(session, silenceFrames(600));
    await events.until(() => events.userTranscripts.length === 1 && events.itemsDone.length === 1);

    // Fifty 20 ms frames: the first 15 of speech alone (the vendor's VAD starts the turn on them),
    // the next 5 in one 100 ms append, then the 30 of quiet alone (it ends the turn on one of them;
    // they are all sent before its speech_stopped comes).
    expect(emulator.connections[0]).toMatchObject({ appendedAudioBytes: 160 * (20 + 30), appendedAudioMessages: 46 });
    expect(events.userTranscripts).toEqual(['hello']);
    expect(events.botTranscripts.map((t) => t.text)).toEqual([REPLY]);
  });

  it('sends a caller who listens on a silent line in 200 ms appends, and the middle of a long utterance in 100 ms', async () => {
    const { session, events } = await open();
    send(session, silenceFrames(1000));
    send(session, speechFrames(1000));
    await events.until(() => events.speechStarts === 1);
    await until(() => emulator.connections[0]!.appendedAudioBytes === 160 * 100);
    // 50 frames of silence in five 200 ms appends; of the 50 of speech, 15 alone, then 35 in seven 100 ms appends.
    expect(emulator.connections[0]!.appendedAudioMessages).toBe(5 + 15 + 7);
  });

  it("sends the silence after the vendor's speech_stopped in 200 ms appends", async () => {
    const { session, events } = await open();
    send(session, speechFrames(400));
    await events.until(() => events.speechStarts === 1);
    // Frame by frame in real time, as a carrier sends them: the vendor ends the turn after 500 ms.
    for (let frame = 0; frame < 75; frame++) {
      send(session, silenceFrames(20));
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    await until(() => emulator.connections[0]!.appendedAudioBytes >= 160 * (20 + 70));
    const connection = emulator.connections[0]!;
    // 15 of speech alone, 5 in one append; then quiet alone until speech_stopped (after 25 frames,
    // a few more in flight), then in 200 ms appends: far fewer than the 60 alone of the whole edge.
    expect(connection.appendedAudioMessages).toBeLessThan(15 + 1 + 45);
    expect(connection.appendedAudioMessages).toBeGreaterThanOrEqual(15 + 1 + 25 + 4);
  });

  it('on interrupt, cancels the response and truncates the item to what the caller heard', async () => {
    await start({
      replies: ['A long answer that the caller will not let the bot finish.'],
      latencies: { ...FAST, ttsRealTimeFactor: 1 },
    });
    const { session, events } = await open({ greet: true });
    await events.until(() => events.audio.size === 1);
    const itemId = [...events.audio.keys()][0]!;

    session.interrupt(itemId, 50);
    // The vendor's answers to these events are not the adapter's to report: watch the vendor's side.
    await until(() => emulator.connections[0]!.truncations.length === 1);

    const connection = emulator.connections[0]!;
    expect(connection.cancels).toBe(1);
    expect(connection.truncations).toEqual([{ itemId, audioEndMs: 50, accepted: true }]);
    expect(connection.responses[0]!.status).toBe('cancelled');
  });

  it('answers a keyed turn (DTMF) as a user message', async () => {
    const { session, events } = await open();
    session.sendText('The caller pressed 1.');
    await events.until(() => events.itemsDone.length === 1);
    expect(emulator.connections[0]!.events.slice(-2)).toEqual([
      {
        type: 'conversation.item.create',
        item: { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'The caller pressed 1.' }] },
      },
      { type: 'response.create' },
    ]);
  });

  it('refuses a wrong key with a non-retryable error that does not show the key', async () => {
    const wrong = 'sk-wrong-key-999999';
    const err = await providerFailure(open({ settings: settings({ apiKey: wrong }) }));
    expect(err.retryable).toBe(false);
    expect(err.message).toBe(
      'openai_realtime: handshake refused: HTTP 401: invalid_request_error: Incorrect API key provided.',
    );
    expect(err.message).not.toContain(wrong);
  });

  it('reports a refusal whose body never ends, rather than waiting for it', async () => {
    const stalling = await startStallingRefusal(401, '{"error":{"message":"Incorrect API key');
    try {
      const err = await providerFailure(open({ settings: settings({ serviceOptions: { base_url: stalling.url } }) }));
      expect(err.message).toMatch(/^openai_realtime: handshake refused: HTTP 401/);
      expect(err.retryable).toBe(false);
    } finally {
      await stalling.close();
    }
  });

  it('gives up on a vendor that never answers the handshake, retryably', async () => {
    const silent = await startSilentServer();
    try {
      const err = await providerFailure(
        open({ settings: settings({ serviceOptions: { base_url: silent.url, timeout_ms: 200 } }) }),
      );
      expect(err.message).toBe('openai_realtime: no answer to the handshake within 200 ms');
      expect(err.retryable).toBe(true);
    } finally {
      await silent.close();
    }
  });

  it('reports a connection the vendor drops mid-call, retryably', async () => {
    const { events } = await open();
    emulator.dropAll();
    await events.until(() => events.errors.length === 1);
    expect(events.errors[0]!.message).toMatch(/^openai_realtime: the connection closed mid-call \(code 1011/);
    expect(events.errors[0]!.retryable).toBe(true);
  });

  it('refuses service options of the wrong type when the provider is built', () => {
    expect(() => createOpenAiRealtime(settings({ serviceOptions: { protocol: 'v2' } }))).toThrow(
      /openai_realtime: invalid service options: protocol/,
    );
  });
});
