import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { decodeMulaw } from '../audio/mulaw.js';
import { SETTLED, SileroVad } from './silero.js';
import { SileroBatcher, type SileroBatchRunner } from './silero-batcher.js';
import { networkRunner } from './silero-network.js';

const CLIPS = ['A01_jfk', 'A04_cheetah_platforms', 'A06_birch_canoe', 'A07_go_forward', 'A10_noise_dishes'];

function pcmOf(name: string): Int16Array {
  const bytes = readFileSync(fileURLToPath(new URL(`../../fixtures/audio/${name}.ulaw`, import.meta.url)));
  // Three seconds each keep the test short.
  return decodeMulaw(new Uint8Array(bytes.buffer, bytes.byteOffset, Math.min(bytes.length, 24_000)));
}

async function feed(vad: SileroVad, pcm: Int16Array): Promise<void> {
  for (let at = 0; at + 160 <= pcm.length; at += 160) await vad.push(pcm.subarray(at, at + 160));
}

describe('batched Silero inference', () => {
  it('gives every call the probabilities it would get alone, while running calls together', async () => {
    // Without runNow, as onnxruntime's runner: windows wait for a turn of the event loop, and those
    // of the same turn run as one batch.
    const runner = networkRunner(8000);
    const batcher = new SileroBatcher({ run: runner.run });
    expect(batcher.runNow).toBeUndefined();
    const clips = CLIPS.map(pcmOf);

    // Alone: one stream at a time, each window run as it completes (runNow, as calls run them).
    const alone: number[][] = [];
    for (const pcm of clips) {
      const seen: number[] = [];
      const vad = new SileroVad({ batcher: new SileroBatcher(networkRunner(8000)), onWindow: (p) => seen.push(p) });
      await feed(vad, pcm);
      alone.push(seen);
    }

    // Together: every stream gets its frame on the same turn, as under load.
    const together = clips.map(() => [] as number[]);
    const vads = clips.map((_, i) => new SileroVad({ batcher, onWindow: (p) => together[i]!.push(p) }));
    const frames = Math.min(...clips.map((c) => Math.floor(c.length / 160)));
    for (let f = 0; f < frames; f++)
      await Promise.all(vads.map((vad, i) => vad.push(clips[i]!.subarray(f * 160, f * 160 + 160))));

    expect(batcher.maxBatchSeen).toBeGreaterThan(1);
    together.forEach((probs, i) => {
      expect(probs.length).toBe(Math.floor((frames * 160) / 256));
      probs.forEach((p, w) => expect(Math.abs(p - alone[i]![w]!)).toBeLessThan(1e-5));
    });
    // Speech scores high somewhere, the dishes clip never as high as speech does.
    expect(Math.max(...together[2]!)).toBeGreaterThan(0.9);
  });

  it('runs a window before the push that completes it returns, on a runner in this thread', async () => {
    const batcher = new SileroBatcher(networkRunner(8000));
    const seen: number[] = [];
    const vad = new SileroVad({ batcher, onWindow: (p) => seen.push(p) });
    const pcm = pcmOf('A06_birch_canoe');
    for (let at = 0; at + 160 <= pcm.length; at += 160) {
      const expected = Math.floor((at + 160) / 256);
      expect(vad.push(pcm.subarray(at, at + 160))).toBe(SETTLED);
      expect(seen.length).toBe(expected);
    }
    expect(batcher.runs).toBe(seen.length);
    expect(Math.max(...seen)).toBeGreaterThan(0.9);
  });

  it('rejects the push whose window fails to run now, and runs the next ones', async () => {
    let fail = true;
    const runner = networkRunner(8000);
    const batcher = new SileroBatcher({
      run: runner.run,
      runNow(rows, steps, state) {
        if (fail) throw new Error('no model');
        return runner.runNow!(rows, steps, state);
      },
    });
    const seen: number[] = [];
    const vad = new SileroVad({ batcher, onWindow: (p) => seen.push(p) });
    await vad.push(new Int16Array(160));
    const pcm = pcmOf('A06_birch_canoe');
    await expect(vad.push(pcm.subarray(0, 160))).rejects.toThrow('no model');
    fail = false;
    for (let at = 160; at + 160 <= 16_000; at += 160) expect(vad.push(pcm.subarray(at, at + 160))).toBe(SETTLED);
    expect(seen.length).toBeGreaterThan(50);
  });

  it('fails every window of a run whose inference fails, and keeps serving afterwards', async () => {
    const batcher = new SileroBatcher(networkRunner(8000));
    const good = new Float32Array(288);
    const state = new Float32Array(256);
    const bad = batcher.infer(new Float32Array(7), new Float32Array(256));
    await expect(bad).rejects.toThrow();
    await expect(batcher.infer(good, state)).resolves.toBeTypeOf('number');
  });
});

describe('gathering windows into batches', () => {
  afterEach(() => vi.useRealTimers());

  /** Stands in for the model: records each run's batch size, answers 0.5 per row. */
  function countingRunner(): SileroBatchRunner & { sizes: number[] } {
    const sizes: number[] = [];
    return {
      sizes,
      async run(_input, state, batchSize) {
        sizes.push(batchSize);
        return { output: new Float32Array(batchSize).fill(0.5), stateN: state.slice() };
      },
    };
  }

  it('runs the windows of calls arriving within gatherMs of the first as one batch', async () => {
    vi.useFakeTimers();
    const runner = countingRunner();
    const batcher = new SileroBatcher(runner, 4);
    // Three calls' windows, each in its own event-loop turn, 1 ms apart: as calls' frames arrive.
    const results: Array<Promise<number>> = [];
    for (let call = 0; call < 3; call++) {
      results.push(batcher.infer(new Float32Array(288), new Float32Array(256)));
      await vi.advanceTimersByTimeAsync(1);
    }
    expect(runner.sizes).toEqual([]);
    await vi.advanceTimersByTimeAsync(4);
    expect(await Promise.all(results)).toEqual([0.5, 0.5, 0.5]);
    expect(runner.sizes).toEqual([3]);
    // The next window starts a new batch, after its own wait.
    const next = batcher.infer(new Float32Array(288), new Float32Array(256));
    await vi.advanceTimersByTimeAsync(4);
    expect(await next).toBe(0.5);
    expect(runner.sizes).toEqual([3, 1]);
  });

  it('gives the event loop a turn between runs when the runner answers at once, even with a backlog', async () => {
    // Calls with 3 s of audio waiting each (carriers catching up): each window a stream runs
    // queues its next from the previous one's answer. Sockets and the playout clock must not wait
    // for all of it.
    // Answers as the TypeScript network does: computed in this thread, the promise already settled.
    const runner: SileroBatchRunner = {
      run: (_input, state, batchSize) =>
        Promise.resolve({ output: new Float32Array(batchSize).fill(0.5), stateN: state.slice() }),
    };
    const batcher = new SileroBatcher(runner);
    // Every other window quiet, as in pauses: each run replays the skipped one first (a sequence),
    // and sequences run one by one, so a round takes many runs.
    const vads = Array.from({ length: 20 }, () => {
      let windows = 0;
      return new SileroVad({ batcher, isQuiet: () => windows++ % 2 === 0 });
    });
    const backlogs = vads.map((vad) => vad.push(new Int16Array(24_000)));
    const processed = () => vads.reduce((sum, vad) => sum + vad.windowsProcessed, 0);
    const processedAtTurns: number[] = [];
    const timer = setInterval(() => processedAtTurns.push(processed()), 0);
    await Promise.all(backlogs);
    clearInterval(timer);
    expect(processed()).toBe(20 * 93);
    // Timers fired while the backlog was being worked through, not only after it.
    expect(processedAtTurns.some((count) => count > 0 && count < 20 * 93)).toBe(true);
  });
});
