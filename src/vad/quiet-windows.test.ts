import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { loudnessVolume } from '../audio/energy.js';
import { decodeMulaw } from '../audio/mulaw.js';
import { QUIET_REPLAY_WINDOWS, SileroVad } from './silero.js';
import { SileroBatcher } from './silero-batcher.js';
import { SILERO_STATE_SIZE } from './silero-model.js';
import { networkRunner, networkSileroBatcher } from './silero-network.js';
import { type VadWindowInfo, VadStream } from './vad-stream.js';

/**
 * Quiet windows are not run through the model (vad-stream.ts, silero.ts). Compared here with the
 * same stream running every window, on recorded speech with silence and line noise around it.
 */

const FIXTURES = fileURLToPath(new URL('../../fixtures/audio/', import.meta.url));
const WINDOW_SAMPLES = 256;
const WINDOW_MS = 32;

function clip(name: string): Int16Array {
  return decodeMulaw(readFileSync(`${FIXTURES}${name}.ulaw`));
}

/** White noise at `dbfs` RMS from a fixed seed: a phone line's hiss when nobody speaks. */
function lineNoise(samples: number, dbfs: number, seed: number): Int16Array {
  let state = seed;
  const amplitude = 32768 * 10 ** (dbfs / 20) * Math.sqrt(3);
  return Int16Array.from({ length: samples }, () => {
    state = (state * 1664525 + 1013904223) >>> 0;
    return Math.round((state / 2 ** 32) * 2 * amplitude - amplitude);
  });
}

/** The clip from a little before its first loud window to a little after its last. */
function speechPart(pcm: Int16Array): Int16Array {
  const windows = Math.floor(pcm.length / WINDOW_SAMPLES);
  const loud: number[] = [];
  for (let w = 0; w < windows; w++)
    if (loudnessVolume(pcm.subarray(w * WINDOW_SAMPLES, (w + 1) * WINDOW_SAMPLES)) >= 0.6) loud.push(w);
  const from = Math.max(0, loud[0]! - 2) * WINDOW_SAMPLES;
  return pcm.subarray(from, Math.min(windows, loud.at(-1)! + 3) * WINDOW_SAMPLES);
}

function silence(samples: number): Int16Array {
  return new Int16Array(samples);
}

function join(...parts: Int16Array[]): Int16Array {
  const out = new Int16Array(parts.reduce((n, part) => n + part.length, 0));
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}

interface Run {
  events: Array<{ type: string; atMs: number }>;
  windows: VadWindowInfo[];
}

async function run(pcm: Int16Array, runQuietWindows: boolean): Promise<Run> {
  const result: Run = { events: [], windows: [] };
  const stream = new VadStream(
    {},
    {
      onSpeechSuspected: (atMs) => result.events.push({ type: 'suspected', atMs }),
      onSpeechStart: (event) => result.events.push({ type: 'start', atMs: event.atMs }),
      onSpeechStop: (event) => result.events.push({ type: 'stop', atMs: event.atMs }),
      onWindow: (info) => result.windows.push(info),
    },
    { batcher: networkSileroBatcher(), runQuietWindows },
  );
  for (let at = 0; at + 160 <= pcm.length; at += 160) await stream.push(pcm.subarray(at, at + 160));
  return result;
}

/** Longest run of windows not run through the model. */
function longestSkippedRun(windows: VadWindowInfo[]): number {
  let longest = 0;
  let current = 0;
  for (const window of windows) {
    current = window.ran ? 0 : current + 1;
    longest = Math.max(longest, current);
  }
  return longest;
}

describe('quiet windows are not run through the model', () => {
  it('a batcher sequence gives the state and probability of running its windows one by one', async () => {
    const batcher = new SileroBatcher(networkRunner(8000));
    const speech = clip('A07_go_forward');
    const rowSamples = 32 + WINDOW_SAMPLES;
    const steps = 12;
    const rows = new Float32Array(steps * rowSamples);
    for (let w = 0; w < steps; w++) {
      const start = 4000 + w * WINDOW_SAMPLES - 32;
      for (let i = 0; i < rowSamples; i++) rows[w * rowSamples + i] = speech[start + i]! / 32768;
    }
    const oneByOne = new Float32Array(SILERO_STATE_SIZE);
    let last = 0;
    for (let w = 0; w < steps; w++)
      last = await batcher.infer(rows.slice(w * rowSamples, (w + 1) * rowSamples), oneByOne);
    const together = new Float32Array(SILERO_STATE_SIZE);
    const probability = await batcher.inferSequence(rows, steps, together);
    expect(probability).toBeCloseTo(last, 6);
    together.forEach((value, i) => expect(value).toBeCloseTo(oneByOne[i]!, 5));
  });

  it('pauses up to the replay length change nothing: same events, same probabilities', async () => {
    // Speech, pauses of 0.25 and 0.5 s (digital silence and line noise), speech again.
    const pcm = join(
      speechPart(clip('A07_go_forward')),
      silence(2000),
      speechPart(clip('A06_birch_canoe')),
      lineNoise(4000, -65, 1),
      speechPart(clip('A04_cheetah_platforms')),
    );
    const [every, skipping] = [await run(pcm, true), await run(pcm, false)];
    // The composition has no quiet stretch longer than what is replayed (else this test is void).
    expect(longestSkippedRun(skipping.windows)).toBeGreaterThan(8);
    expect(longestSkippedRun(skipping.windows)).toBeLessThanOrEqual(QUIET_REPLAY_WINDOWS);
    expect(skipping.events).toEqual(every.events);
    expect(skipping.events.filter((e) => e.type === 'start').length).toBeGreaterThanOrEqual(1);
    // Skipped windows may have had any probability: too quiet to count, they decided nothing.
    skipping.windows.forEach((window, i) => {
      if (window.ran) expect(window.probability).toBeCloseTo(every.windows[i]!.probability, 5);
    });
  });

  it('after long silences, speech starts within a window of running every window, not later on balance, at a fraction of the runs', async () => {
    let shiftMs = 0;
    let starts = 0;
    let ran = 0;
    let windows = 0;
    const quietLines: Array<(samples: number) => Int16Array> = [silence, (n) => lineNoise(n, -60, 7)];
    for (const quiet of quietLines) {
      for (const name of ['A01_jfk', 'A05_pipecat_facebook', 'A06_birch_canoe', 'A07_go_forward']) {
        // The caller listening to the bot for 3 s, then speaking; twice.
        const pcm = join(quiet(24_000), clip(name), quiet(24_000), clip(name), quiet(8000));
        const [every, skipping] = [await run(pcm, true), await run(pcm, false)];
        const expected = every.events.filter((e) => e.type === 'start' || e.type === 'stop');
        const got = skipping.events.filter((e) => e.type === 'start' || e.type === 'stop');
        expect(
          got.map((e) => e.type),
          name,
        ).toEqual(expected.map((e) => e.type));
        got.forEach((event, i) => {
          const shift = event.atMs - expected[i]!.atMs;
          const what = `${name}: ${event.type} at ${expected[i]!.atMs} ms`;
          if (event.type === 'stop') expect(Math.abs(shift), what).toBeLessThanOrEqual(WINDOW_MS);
          else {
            // Earlier is allowed: after a long silence the model may commit sooner.
            expect(shift, what).toBeLessThanOrEqual(WINDOW_MS);
            shiftMs += shift;
            starts += 1;
          }
        });
        // The first window of plausible speech (what stops the bot at once) is not later either.
        const suspicions = (r: Run) => r.events.filter((e) => e.type === 'suspected').map((e) => e.atMs);
        expect(suspicions(skipping).length, name).toBe(suspicions(every).length);
        suspicions(skipping).forEach((atMs, i) =>
          expect(atMs - suspicions(every)[i]!, name).toBeLessThanOrEqual(WINDOW_MS),
        );
        ran += skipping.windows.filter((w) => w.ran).length;
        windows += skipping.windows.length;
      }
    }
    expect(starts).toBeGreaterThanOrEqual(16);
    expect(shiftMs).toBeLessThanOrEqual(0);
    // About half of these windows are the 3 s silences; most of those are not run.
    expect(ran / windows).toBeLessThan(0.75);
  });
});

describe('the rows a run after quiet windows replays', () => {
  it('are each window after the tail of the one before it, as if every window had been run, and the state starts afresh after a long stretch', () => {
    // A runner that records what it is given; a window is "loud" when its first sample is odd.
    const rowSamples = 32 + WINDOW_SAMPLES;
    const calls: Array<{ rows: Float32Array; stateIn: number }> = [];
    const runner = {
      runNow(rows: Float32Array, steps: number, state: Float32Array): number {
        calls.push({ rows: rows.slice(0, steps * rowSamples), stateIn: state[0]! });
        state.fill(calls.length);
        return 0.5;
      },
      run: () => Promise.reject(new Error('not used')),
    };
    // Quiet stretches (in windows) each followed by one loud window.
    const stretches = [0, 3, QUIET_REPLAY_WINDOWS, QUIET_REPLAY_WINDOWS + 1, QUIET_REPLAY_WINDOWS + 9, 1];
    const windows: Int16Array[] = [];
    let sample = 0;
    const next = () => (sample = (sample + 2) % 30000);
    for (const quiet of stretches) {
      for (let w = 0; w < quiet; w++) windows.push(Int16Array.from({ length: WINDOW_SAMPLES }, next));
      windows.push(Int16Array.from({ length: WINDOW_SAMPLES }, (_, i) => next() + (i === 0 ? 1 : 0)));
    }
    const stream = join(...windows);
    const vad = new SileroVad({ batcher: new SileroBatcher(runner), isQuiet: (window) => window[0]! % 2 === 0 });
    for (let at = 0; at < stream.length; at += 160) vad.push(stream.subarray(at, at + 160));

    // Window w's row: the last 32 samples of window w - 1 (zeros for the first), then its own.
    const row = (w: number) =>
      Float32Array.from({ length: rowSamples }, (_, i) =>
        i < 32 ? (w === 0 ? 0 : windows[w - 1]![WINDOW_SAMPLES - 32 + i]! / 32768) : windows[w]![i - 32]! / 32768,
      );
    expect(calls).toHaveLength(stretches.length);
    let loud = -1;
    stretches.forEach((quiet, i) => {
      loud += quiet + 1;
      const replayed = Math.min(quiet, QUIET_REPLAY_WINDOWS);
      const want = new Float32Array((replayed + 1) * rowSamples);
      for (let k = 0; k <= replayed; k++) want.set(row(loud - replayed + k), k * rowSamples);
      expect(calls[i]!.rows).toEqual(want);
      // After a stretch longer than the replay the state is begun afresh; else it is the last run's.
      expect(calls[i]!.stateIn).toBe(quiet > QUIET_REPLAY_WINDOWS ? 0 : i);
    });
  });
});
