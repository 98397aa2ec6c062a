import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { decodeMulaw } from '../audio/mulaw.js';
import { resample } from '../audio/resample.js';
import { SileroVad } from './silero.js';
import { SileroBatcher } from './silero-batcher.js';
import { networkRunner } from './silero-network.js';
import { getSileroSession, releaseSileroSession, sileroModelPath } from './silero-model.js';

const FIXTURES = fileURLToPath(new URL('../../fixtures/audio/', import.meta.url));
const jfk = decodeMulaw(readFileSync(`${FIXTURES}A01_jfk.ulaw`));

interface Window {
  probability: number;
  endSample: number;
}

/** Runs `pcm` through a fresh stream in chunks of `chunkSamples`, awaiting each push. */
async function probabilities(pcm: Int16Array, chunkSamples = 160, sampleRateHz: 8000 | 16000 = 8000) {
  const windows: Window[] = [];
  const vad = await SileroVad.create({
    sampleRateHz,
    onWindow: (probability, _window, endSample) => windows.push({ probability, endSample }),
  });
  for (let offset = 0; offset < pcm.length; offset += chunkSamples) {
    await vad.push(pcm.subarray(offset, offset + chunkSamples));
  }
  return { vad, windows };
}

afterAll(async () => {
  await releaseSileroSession();
});

describe('silero model', () => {
  it('resolves the bundled v6 model and exposes input/state/sr -> output/stateN', async () => {
    expect(sileroModelPath()).toMatch(/silero-vad[\\/]weights[\\/]silero_vad\.onnx$/);
    expect(existsSync(sileroModelPath())).toBe(true);
    const session = await getSileroSession();
    expect([...session.inputNames].sort()).toEqual(['input', 'sr', 'state']);
    expect([...session.outputNames].sort()).toEqual(['output', 'stateN']);
    expect(await getSileroSession()).toBe(session);
  });
});

describe('SileroVad', () => {
  it('runs one 256-sample window per 32 ms and reports stream positions', async () => {
    const { vad, windows } = await probabilities(jfk);
    expect(windows.length).toBe(Math.floor(jfk.length / 256));
    expect(windows.every((w, i) => w.endSample === (i + 1) * 256)).toBe(true);
    expect(vad.samplesFed).toBe(jfk.length);
    expect(vad.windowsProcessed).toBe(windows.length);
  });

  it('finds speech in the JFK clip and none in its leading silence', async () => {
    const { windows } = await probabilities(jfk);
    const speechRatio = windows.filter((w) => w.probability >= 0.7).length / windows.length;
    expect(speechRatio).toBeGreaterThan(0.5);
    // "And so my fellow Americans" starts about 0.35 s in.
    expect(windows.slice(0, 8).every((w) => w.probability < 0.2)).toBe(true);
    expect(windows.slice(12, 40).every((w) => w.probability > 0.7)).toBe(true);
  });

  it('reports near-zero probability for digital silence', async () => {
    const { windows } = await probabilities(new Int16Array(8000));
    expect(Math.max(...windows.map((w) => w.probability))).toBeLessThan(0.1);
  });

  it('gives the same probabilities whatever the chunking (context and buffering are seamless)', async () => {
    const clip = jfk.subarray(0, 8000 * 3);
    const byFrame = (await probabilities(clip, 160)).windows.map((w) => w.probability);
    const byOdd = (await probabilities(clip, 97)).windows.map((w) => w.probability);
    const whole = (await probabilities(clip, clip.length)).windows.map((w) => w.probability);
    expect(byOdd.length).toBe(byFrame.length);
    expect(whole.length).toBe(byFrame.length);
    for (let i = 0; i < byFrame.length; i++) {
      expect(byOdd[i]).toBeCloseTo(byFrame[i]!, 5);
      expect(whole[i]).toBeCloseTo(byFrame[i]!, 5);
    }
  });

  it('keeps order when pushes are not awaited', async () => {
    const clip = jfk.subarray(0, 8000 * 2);
    const expected = (await probabilities(clip)).windows.map((w) => w.probability);
    const seen: number[] = [];
    const vad = await SileroVad.create({ onWindow: (p) => seen.push(p) });
    const pushes: Promise<void>[] = [];
    for (let offset = 0; offset < clip.length; offset += 160)
      pushes.push(vad.push(clip.subarray(offset, offset + 160)));
    await Promise.all(pushes);
    expect(seen).toEqual(expected);
  });

  it('copies pushed samples, so callers may reuse their frame buffer', async () => {
    const clip = jfk.subarray(0, 8000 * 2);
    const expected = (await probabilities(clip)).windows.map((w) => w.probability);
    const seen: number[] = [];
    const vad = await SileroVad.create({ onWindow: (p) => seen.push(p) });
    const frame = new Int16Array(160);
    const pushes: Promise<void>[] = [];
    for (let offset = 0; offset < clip.length; offset += 160) {
      frame.set(clip.subarray(offset, offset + 160));
      pushes.push(vad.push(frame));
    }
    await Promise.all(pushes);
    expect(seen).toEqual(expected);
  });

  it('reset makes the stream behave like a new one', async () => {
    const clip = jfk.subarray(0, 8000 * 2);
    const { vad, windows } = await probabilities(clip);
    const first = windows.map((w) => w.probability);
    windows.length = 0;
    vad.reset();
    expect(vad.samplesFed).toBe(0);
    for (let offset = 0; offset < clip.length; offset += 160) await vad.push(clip.subarray(offset, offset + 160));
    expect(windows.map((w) => w.probability)).toEqual(first);
  });

  it('works at 16 kHz with 512-sample windows', async () => {
    const wideband = resample(jfk, 8000, 16000);
    const { windows } = await probabilities(wideband, 320, 16000);
    expect(windows.length).toBe(Math.floor(wideband.length / 512));
    expect(windows.filter((w) => w.probability >= 0.7).length / windows.length).toBeGreaterThan(0.5);
  });

  it('keeps at most maxPendingMs of audio waiting, without shifting it per window, when pushes outrun the model', async () => {
    // 100 s of audio pushed at once: far more than the model can run before the pushes return.
    const frames = 5000;
    const ends: number[] = [];
    // A runner that needs a turn of the event loop (as onnxruntime's): the network's own runs each
    // window before the push returns, so it never falls behind.
    const { run } = networkRunner(8000);
    const vad = await SileroVad.create({
      batcher: new SileroBatcher({ run }),
      onWindow: (_p, _window, end) => ends.push(end),
    });
    const shifts = vi.spyOn(Int16Array.prototype, 'copyWithin');
    const capacityAtStart = vad.pendingCapacity;
    let peakPending = 0;
    let peakCapacity = 0;
    const pushes: Promise<void>[] = [];
    let shiftCalls: number;
    try {
      for (let i = 0; i < frames; i++) {
        const at = (i * 160) % (jfk.length - 160);
        pushes.push(vad.push(jfk.subarray(at, at + 160)));
        peakPending = Math.max(peakPending, vad.pendingSamples);
        peakCapacity = Math.max(peakCapacity, vad.pendingCapacity);
      }
      await Promise.all(pushes);
      shiftCalls = shifts.mock.calls.length;
    } finally {
      shifts.mockRestore();
    }
    expect(vad.maxPendingSamples).toBe(24_000);
    expect(peakPending).toBeLessThanOrEqual(vad.maxPendingSamples);
    expect(peakCapacity).toBeLessThanOrEqual(vad.maxPendingSamples);
    expect(capacityAtStart).toBeLessThan(vad.maxPendingSamples);
    // The waiting audio never moved: windows were read out of the ring, not shifted out of it.
    expect(shiftCalls).toBe(0);
    // Only the newest audio was analysed; the rest was counted as dropped, and positions stay true.
    expect(ends.length).toBeLessThanOrEqual(Math.ceil(vad.maxPendingSamples / 256) + 1);
    expect(vad.samplesDropped + ends.length * 256 + vad.pendingSamples).toBe(frames * 160);
    expect(ends.at(-1)).toBe(frames * 160 - vad.pendingSamples);
    expect(ends.every((end, i) => i === 0 || end - ends[i - 1]! === 256)).toBe(true);
  });

  it('drops nothing when audio arrives in real time, however long the stream', async () => {
    const vad = await SileroVad.create();
    for (let i = 0; i < 2000; i++) {
      const at = (i * 160) % (jfk.length - 160);
      await vad.push(jfk.subarray(at, at + 160));
    }
    expect(vad.samplesDropped).toBe(0);
    expect(vad.windowsProcessed).toBe(Math.floor((2000 * 160) / 256));
    expect(vad.pendingCapacity).toBeLessThanOrEqual(256 * 4);
  });

  it('rejects unsupported sample rates', () => {
    expect(() => new SileroVad({ sampleRateHz: 44100 as 8000 })).toThrow(RangeError);
  });
});
