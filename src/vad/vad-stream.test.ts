import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { MULAW_FRAME_BYTES } from '../audio/frames.js';
import { decodeMulaw } from '../audio/mulaw.js';
import { releaseSileroSession } from './silero-model.js';
import type { VadAnalyzerParams, VadEvent } from './vad-analyzer.js';
import { VadStream, type VadWindowInfo } from './vad-stream.js';

const FIXTURES = fileURLToPath(new URL('../../fixtures/audio/', import.meta.url));
const fixture = (id: string) => readFileSync(`${FIXTURES}${id}.ulaw`);

/** Plays a mu-law clip through a VadStream in 20 ms frames, as the carrier would send it. */
async function playMulaw(bytes: Uint8Array, params: Partial<VadAnalyzerParams> = {}) {
  const events: VadEvent[] = [];
  const windows: VadWindowInfo[] = [];
  const vad = new VadStream(params, {
    onSpeechStart: (e) => events.push(e),
    onSpeechStop: (e) => events.push(e),
    onWindow: (w) => windows.push(w),
  });
  for (let offset = 0; offset + MULAW_FRAME_BYTES <= bytes.length; offset += MULAW_FRAME_BYTES) {
    await vad.pushMulaw(bytes.subarray(offset, offset + MULAW_FRAME_BYTES));
  }
  const speakingWindows = windows.filter((w) => w.state === 'speaking' || w.state === 'stopping').length;
  return { vad, events, windows, speechRatio: speakingWindows / windows.length };
}

afterAll(async () => {
  await releaseSileroSession();
});

describe('VadStream with the real model', () => {
  it('A01 (JFK speech): detects speech early and stays in speech most of the clip', async () => {
    const { events, speechRatio, vad } = await playMulaw(fixture('A01_jfk'));
    const first = events[0]!;
    expect(first.type).toBe('speech-start');
    // Speech begins about 0.32 s in; with start_secs = 0.2 it is confirmed about 0.2 s later.
    expect(first.sinceMs).toBeGreaterThanOrEqual(200);
    expect(first.sinceMs).toBeLessThanOrEqual(500);
    expect(first.atMs - first.sinceMs).toBe(192); // 6 windows of 32 ms
    expect(speechRatio).toBeGreaterThan(0.75);
    expect(vad.streamMs).toBe(11_000);
  });

  it('events alternate start/stop with increasing stream times', async () => {
    const { events } = await playMulaw(fixture('A01_jfk'));
    expect(events.length).toBeGreaterThanOrEqual(3);
    events.forEach((event, i) => {
      expect(event.type).toBe(i % 2 === 0 ? 'speech-start' : 'speech-stop');
      // Each run (of speech or of silence) begins after the previous change was confirmed.
      if (i > 0) expect(event.sinceMs).toBeGreaterThanOrEqual(events[i - 1]!.atMs);
    });
    for (const stop of events.filter((e) => e.type === 'speech-stop')) expect(stop.atMs - stop.sinceMs).toBe(800);
  });

  it('A10 (dishes and running water, no speech): no speech with the default params', async () => {
    const { events, windows, speechRatio } = await playMulaw(fixture('A10_noise_dishes'));
    expect(events).toEqual([]);
    expect(speechRatio).toBe(0);
    // The noise is loud (it passes the volume gate); the model is what rejects it.
    expect(windows.filter((w) => w.volume >= 0.6).length / windows.length).toBeGreaterThan(0.5);
    expect(windows.filter((w) => w.probability >= 0.7).length).toBeLessThanOrEqual(2);
  });

  it('A09 (speech at 0 dB SNR): still detects the speech', async () => {
    const { events, speechRatio } = await playMulaw(fixture('A09_noisy_speech_snr0'));
    expect(events[0]?.type).toBe('speech-start');
    expect(events[0]!.atMs).toBeLessThan(3000);
    expect(speechRatio).toBeGreaterThan(0.5);
  });

  it('a stricter confidence or volume gate suppresses detection', async () => {
    const strictVolume = await playMulaw(fixture('A07_go_forward'), { min_volume: 0.99 });
    expect(strictVolume.events).toEqual([]);
    const normal = await playMulaw(fixture('A07_go_forward'));
    expect(normal.events[0]?.type).toBe('speech-start');
  });

  it('push (PCM) and pushMulaw give identical results', async () => {
    const bytes = fixture('A06_birch_canoe');
    const viaMulaw = await playMulaw(bytes);
    const pcm = decodeMulaw(bytes);
    const probabilities: number[] = [];
    const vad = new VadStream({}, { onWindow: (w) => probabilities.push(w.probability) });
    for (let offset = 0; offset + 160 <= pcm.length; offset += 160) await vad.push(pcm.subarray(offset, offset + 160));
    expect(probabilities).toEqual(viaMulaw.windows.map((w) => w.probability));
  });

  it('dispose stops events', async () => {
    const events: VadEvent[] = [];
    const vad = new VadStream({}, { onSpeechStart: (e) => events.push(e) });
    const bytes = fixture('A01_jfk');
    for (let offset = 0; offset < 160 * 10; offset += 160) await vad.pushMulaw(bytes.subarray(offset, offset + 160));
    vad.dispose();
    for (let offset = 1600; offset < bytes.length; offset += 160)
      await vad.pushMulaw(bytes.subarray(offset, offset + 160));
    expect(events).toEqual([]);
  });

  it('routes model failures to onError, or rejects push when there is no onError', async () => {
    const failing = Promise.reject(new Error('model missing'));
    const errors: unknown[] = [];
    const withHandler = new VadStream({}, { onError: (e) => errors.push(e) }, { session: failing });
    // Loud enough to need the model (quiet windows are not run).
    const loud = new Int16Array(160).map((_, i) => (i % 2 ? 3000 : -3000));
    for (let i = 0; i < 4; i++) await withHandler.push(loud);
    expect(errors.length).toBeGreaterThan(0);
    expect((errors[0] as Error).message).toBe('model missing');

    const withoutHandler = new VadStream({}, {}, { session: failing });
    await withoutHandler.push(loud); // not a full window yet: no model run
    await expect(withoutHandler.push(loud)).rejects.toThrow('model missing');
  });
});
