import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import pino from 'pino';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { decodeMulaw } from '../audio/mulaw.js';
import { DEFAULT_VAD_PARAMS } from '../pipeline/bot-settings.js';
import { SileroVad } from './silero.js';
import { SileroBatcher } from './silero-batcher.js';
import { createSileroCallVad } from './silero-call-vad.js';
import { releaseSileroSession } from './silero-model.js';
import { VadStream } from './vad-stream.js';
import { closeSileroWorkers, SileroWorkerRunner } from './silero-worker-runner.js';

const CLIPS = ['A01_jfk', 'A07_go_forward', 'A10_noise_dishes'];

function pcmOf(name: string): Int16Array {
  const bytes = readFileSync(fileURLToPath(new URL(`../../fixtures/audio/${name}.ulaw`, import.meta.url)));
  return decodeMulaw(new Uint8Array(bytes.buffer, bytes.byteOffset, Math.min(bytes.length, 24_000)));
}

const runners: SileroWorkerRunner[] = [];
function workerBatcher(): SileroBatcher {
  const runner = new SileroWorkerRunner(8000);
  runners.push(runner);
  return new SileroBatcher(runner);
}

afterAll(async () => {
  await Promise.all(runners.map((r) => r.close()));
  await closeSileroWorkers();
  await releaseSileroSession();
});

describe('Silero in a worker thread', () => {
  it('gives each call, batched in the worker, the probabilities it gets alone in this thread', async () => {
    const clips = CLIPS.map(pcmOf);
    const alone: number[][] = [];
    for (const pcm of clips) {
      const seen: number[] = [];
      const vad = await SileroVad.create({ onWindow: (p) => seen.push(p) });
      for (let at = 0; at + 160 <= pcm.length; at += 160) await vad.push(pcm.subarray(at, at + 160));
      alone.push(seen);
    }

    const batcher = workerBatcher();
    const together = clips.map(() => [] as number[]);
    const vads = clips.map((_, i) => new SileroVad({ batcher, onWindow: (p) => together[i]!.push(p) }));
    const frames = Math.min(...clips.map((c) => Math.floor(c.length / 160)));
    // Not awaited frame by frame: windows of all calls pile up and run as batches.
    const pushes: Promise<void>[] = [];
    for (let f = 0; f < frames; f++)
      vads.forEach((vad, i) => pushes.push(vad.push(clips[i]!.subarray(f * 160, f * 160 + 160))));
    await Promise.all(pushes);

    expect(batcher.maxBatchSeen).toBeGreaterThan(1);
    together.forEach((probs, i) => {
      expect(probs.length).toBe(Math.floor((frames * 160) / 256));
      probs.forEach((p, w) => expect(Math.abs(p - alone[i]![w]!)).toBeLessThan(1e-5));
    });
    expect(Math.max(...together[0]!)).toBeGreaterThan(0.9);
  });

  it('fails the batches in flight when the worker goes away, and starts a new one for the next', async () => {
    const runner = new SileroWorkerRunner(8000);
    runners.push(runner);
    const batcher = new SileroBatcher(runner);
    await expect(batcher.infer(new Float32Array(288), new Float32Array(256))).resolves.toBeTypeOf('number');
    const inFlight = expect(batcher.infer(new Float32Array(288), new Float32Array(256))).rejects.toThrow(/closed/);
    await new Promise((resolve) => setImmediate(resolve)); // the batch has been posted
    await runner.close();
    await inFlight;
    await expect(batcher.infer(new Float32Array(288), new Float32Array(256))).resolves.toBeTypeOf('number');
  });

  it('a failed inference rejects the push; a call goes on without VAD, logged once, and new calls still get VAD', async () => {
    const batcher = workerBatcher();
    // A 16 kHz stream's rows on the 8 kHz model: the worker's session rejects the shapes.
    const vad = new SileroVad({ batcher, sampleRateHz: 16000 });
    await expect(vad.push(new Int16Array(512))).rejects.toThrow(/inference failed/);

    const errors: Array<{ msg: string }> = [];
    const log = pino({ level: 'error' }, { write: (line: string) => errors.push(JSON.parse(line)) });
    const speech = pcmOf('A01_jfk');
    const events = { onSpeechStart() {}, onSpeechStop() {} };
    const failing = createSileroCallVad(DEFAULT_VAD_PARAMS, events, log);
    for (let at = 0; at + 160 <= 8000; at += 160) failing.push(speech.subarray(at, at + 160));
    // The worker dies under the call's windows in flight.
    // The first batch is posted within a turn or two; the worker is still loading the model.
    await new Promise((resolve) => setTimeout(resolve, 20));
    await closeSileroWorkers();
    for (let at = 8000; at + 160 <= speech.length; at += 160) failing.push(speech.subarray(at, at + 160));
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(errors.map((e) => e.msg)).toEqual(['voice activity detection failed; continuing without it']);

    let started = 0;
    const healthy = createSileroCallVad(DEFAULT_VAD_PARAMS, { onSpeechStart: () => started++, onSpeechStop() {} }, log);
    for (let at = 0; at + 160 <= speech.length; at += 160) {
      healthy.push(speech.subarray(at, at + 160));
      if (at % 3200 === 0) await new Promise((resolve) => setTimeout(resolve, 5));
    }
    // The new worker loads the model first.
    await vi.waitFor(() => expect(started).toBeGreaterThan(0), { timeout: 10_000, interval: 50 });
    expect(errors.length).toBe(1);
    healthy.dispose();
    failing.dispose();
  });

  it('a stream reset or disposed mid-batch leaves the others untouched and starts clean', async () => {
    const batcher = workerBatcher();
    const clip = pcmOf('A01_jfk');
    const expected: number[] = [];
    const reference = await SileroVad.create({ onWindow: (p) => expected.push(p) });
    for (let at = 0; at + 160 <= clip.length; at += 160) await reference.push(clip.subarray(at, at + 160));

    const kept: number[] = [];
    const keptVad = new SileroVad({ batcher, onWindow: (p) => kept.push(p) });
    const resetSeen: number[] = [];
    const resetVad = new SileroVad({ batcher, onWindow: (p) => resetSeen.push(p) });
    const disposed = new VadStream(
      {},
      { onWindow: () => expect.fail('disposed stream reported a window') },
      // Every window to the worker, the clip's quiet start too: they are in flight at dispose().
      { batcher, runQuietWindows: true },
    );
    const pushes: Promise<void>[] = [];
    for (let at = 0; at + 160 <= 8000; at += 160) {
      const frame = clip.subarray(at, at + 160);
      pushes.push(keptVad.push(frame), resetVad.push(frame), disposed.push(frame));
    }
    // Their windows are queued, or in flight in the worker (which is still loading the model).
    await new Promise((resolve) => setTimeout(resolve, 20));
    disposed.dispose();
    resetVad.reset();
    resetSeen.length = 0;
    for (let at = 8000; at + 160 <= clip.length; at += 160) pushes.push(keptVad.push(clip.subarray(at, at + 160)));
    for (let at = 0; at + 160 <= clip.length; at += 160) pushes.push(resetVad.push(clip.subarray(at, at + 160)));
    await Promise.all(pushes);

    expect(kept.length).toBe(expected.length);
    kept.forEach((p, w) => expect(Math.abs(p - expected[w]!)).toBeLessThan(1e-5));
    // After the reset the stream behaves like a new one fed the clip from the start.
    expect(resetSeen.length).toBe(expected.length);
    resetSeen.forEach((p, w) => expect(Math.abs(p - expected[w]!)).toBeLessThan(1e-5));
  });
});
