import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type RunningEmulators, startEmulatorServer } from '../../../tools/emulators/emulator-server.js';
import { GeminiLiveEmulator, type GeminiLiveEmulatorOptions } from '../../../tools/emulators/gemini-live-emulator.js';
import type { ProviderSettings } from '../../registry.js';
import type { S2sSession } from '../types.js';
import { createGeminiLive } from './index.js';
import {
  EMULATOR_ENV,
  context,
  providerFailure,
  startSilentServer,
  startStallingRefusal,
  until,
} from '../../../../test/helpers/provider-kit.js';
import { RecordedS2sEvents, silenceFrames, speechFrames } from '../../../../test/helpers/s2s-kit.js';

const KEY = 'gemini-live-test-0123456789';
const FAST = { llmFirstTokenMs: 2, ttsFirstByteMs: 2, ttsRealTimeFactor: 50 };
/** 8 kHz mu-law bytes per ms: what 24 kHz PCM becomes on the phone. */
const MULAW_BYTES_PER_MS = 8;
const REPLY = 'Hello there.';

let server: RunningEmulators;
let emulator: GeminiLiveEmulator;
let baseUrl: string;
const sessions: S2sSession[] = [];

async function start(options: GeminiLiveEmulatorOptions = {}): Promise<void> {
  await server?.close();
  emulator = new GeminiLiveEmulator({ latencies: FAST, apiKey: KEY, replies: [REPLY], ...options });
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
  const provider = createGeminiLive(options.settings ?? settings());
  const history = [{ role: 'system' as const, content: 'You are a receptionist.' }];
  const session = await provider.open(context(), { history, greet: options.greet ?? false }, events);
  sessions.push(session);
  return { session, events };
}

function send(session: S2sSession, frames: Uint8Array[]): void {
  for (const frame of frames) session.sendAudio(frame);
}

describe('Gemini Live against the emulator', () => {
  it('sets the session up, then speaks its greeting as 8 kHz mu-law with its transcript', async () => {
    const { events } = await open({ greet: true });
    await events.until(() => events.itemsDone.length === 1);

    const connection = emulator.connections[0]!;
    expect(connection.setup).toMatchObject({
      model: 'models/gemini-2.5-flash-native-audio-preview-12-2025',
      generationConfig: {
        responseModalities: ['AUDIO'],
        speechConfig: { voiceConfig: { prebuiltVoiceConfig: { voiceName: 'Puck' } } },
      },
      systemInstruction: { parts: [{ text: 'You are a receptionist.' }] },
    });
    expect(connection.messages).toEqual([
      {
        clientContent: {
          turns: [{ role: 'user', parts: [{ text: 'The caller has just connected. Greet them.' }] }],
          turnComplete: true,
        },
      },
    ]);

    expect(events.itemsDone).toEqual(['turn-1']);
    // 24 kHz PCM resampled to 8 kHz: the reply's 60 ms per character, give or take the resampler's edge.
    const expectedBytes = REPLY.length * 60 * MULAW_BYTES_PER_MS;
    expect(Math.abs(events.audio.get('turn-1')! - expectedBytes)).toBeLessThanOrEqual(16);
    expect(events.botTranscripts).toEqual([{ itemId: 'turn-1', text: REPLY }]);
    expect(events.errors).toEqual([]);
  });

  it('sends the caller as 16 kHz PCM and reports the caller turn the vendor heard', async () => {
    const { session, events } = await open();
    send(session, speechFrames(400));
    send(session, silenceFrames(600));
    await events.until(() => events.userTranscripts.length === 1 && events.itemsDone.length === 1);

    const connection = emulator.connections[0]!;
    expect(connection.audioMimeTypes).toEqual(['audio/pcm;rate=16000']);
    // Each mu-law byte (one 8 kHz sample) becomes two 16-bit samples at 16 kHz; the resampler
    // holds back a few samples of the last frame for the next one.
    const sentBytes = 160 * (20 + 30) * 4;
    expect(connection.audioBytes).toBeLessThanOrEqual(sentBytes);
    expect(connection.audioBytes).toBeGreaterThan(sentBytes - 160 * 4);
    // Fifty 20 ms frames: those at the edges of speech alone, the middle of speech in 100 ms
    // messages (caller-audio-messages.ts): 15 of speech alone, 5 in one message, 30 of quiet alone.
    expect(connection.audioMessages).toBe(46);
    expect(events.userTranscripts).toEqual(['hello']);
  });

  it('reports the vendor interrupting itself, and gives the next model turn a new id', async () => {
    await start({
      replies: ['A long answer that the caller will not let the bot finish.', REPLY],
      latencies: { ...FAST, ttsRealTimeFactor: 1 },
    });
    const { session, events } = await open({ greet: true });
    await events.until(() => events.audio.has('turn-1'));

    events.bargeIn = () => session.interrupt('turn-1', 0);
    send(session, speechFrames(200));
    await events.until(() => events.speechStarts === 1);
    send(session, silenceFrames(600));
    await events.until(() => events.itemsDone.includes('turn-2'));

    expect(emulator.connections[0]!.modelTurns.map((t) => t.status)[0]).toBe('interrupted');
    expect(events.botTranscripts.map((t) => t.itemId)).toEqual(['turn-1', 'turn-2']);
    // The interrupted turn is over without its end: only the new one is reported done.
    expect(events.itemsDone).toEqual(['turn-2']);
  });

  it('answers a keyed turn (DTMF) as a complete user turn', async () => {
    const { session, events } = await open();
    session.sendText('The caller pressed 1.');
    await events.until(() => events.itemsDone.length === 1);
    expect(emulator.connections[0]!.messages).toEqual([
      { clientContent: { turns: [{ role: 'user', parts: [{ text: 'The caller pressed 1.' }] }], turnComplete: true } },
    ]);
  });

  it('refuses a wrong key with a non-retryable error that does not show the key', async () => {
    const wrong = 'gemini-wrong-key-999999';
    const err = await providerFailure(open({ settings: settings({ apiKey: wrong }) }));
    expect(err.retryable).toBe(false);
    expect(err.message).toBe(
      'gemini_live: handshake refused: HTTP 401: UNAUTHENTICATED: API key not valid. Please pass a valid API key.',
    );
    expect(err.message).not.toContain(wrong);
  });

  it('reports a refusal whose body never ends, rather than waiting for it', async () => {
    const stalling = await startStallingRefusal(401, '{"error":{"message":"API key not valid');
    try {
      const err = await providerFailure(open({ settings: settings({ serviceOptions: { base_url: stalling.url } }) }));
      expect(err.message).toMatch(/^gemini_live: handshake refused: HTTP 401/);
    } finally {
      await stalling.close();
    }
  });

  it('gives up on a vendor that never completes the setup, retryably', async () => {
    const silent = await startSilentServer();
    try {
      const err = await providerFailure(
        open({ settings: settings({ serviceOptions: { base_url: silent.url, timeout_ms: 200 } }) }),
      );
      expect(err.message).toMatch(/^gemini_live: (no setupComplete|no answer to the handshake) within 200 ms$/);
      expect(err.retryable).toBe(true);
    } finally {
      await silent.close();
    }
  });

  it('reports a connection the vendor drops mid-call, retryably', async () => {
    const { events } = await open();
    await until(() => emulator.connections.length === 1);
    emulator.dropAll();
    await events.until(() => events.errors.length === 1);
    expect(events.errors[0]!.message).toMatch(/^gemini_live: the connection closed mid-call \(code 1011/);
    expect(events.errors[0]!.retryable).toBe(true);
  });
});
