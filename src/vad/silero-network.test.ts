import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { decodeMulaw } from '../audio/mulaw.js';
import { resample } from '../audio/resample.js';
import { sessionRunner } from './silero-batcher.js';
import { getSileroSession, releaseSileroSession, SILERO_GEOMETRY, SILERO_STATE_SIZE } from './silero-model.js';
import { networkRunner, networkSileroBatcher, type RateWeights, rateWeights, SileroNetwork } from './silero-network.js';
import { VadStream } from './vad-stream.js';

/**
 * The TypeScript network against onnxruntime running the same model file: window by window, the
 * same probabilities and states (to float32 rounding: the two add the same products in different
 * orders), and the same VAD decisions on every fixture and every held-apart clip.
 */

const FIXTURES = fileURLToPath(new URL('../../fixtures/audio/', import.meta.url));
const HELD_APART = fileURLToPath(new URL('../../bench/held-apart-speech/', import.meta.url));

function clips(): Array<{ name: string; mulaw: Uint8Array }> {
  return [FIXTURES, HELD_APART].flatMap((dir) =>
    readdirSync(dir)
      .filter((file) => file.endsWith('.ulaw'))
      .map((file) => ({ name: file, mulaw: new Uint8Array(readFileSync(`${dir}${file}`)) })),
  );
}

afterAll(async () => {
  await releaseSileroSession();
});

/** Largest differences between the two, each carrying its own state from window to window. */
async function compare(pcm: Int16Array, sampleRateHz: 8000 | 16000, weights?: RateWeights) {
  const { windowSamples, contextSamples } = SILERO_GEOMETRY[sampleRateHz];
  const rowSamples = contextSamples + windowSamples;
  const reference = sessionRunner(await getSileroSession(), sampleRateHz);
  const network = networkRunner(sampleRateHz, weights && new SileroNetwork(sampleRateHz, weights));
  const referenceState = new Float32Array(SILERO_STATE_SIZE);
  const networkState = new Float32Array(SILERO_STATE_SIZE);
  const row = new Float32Array(rowSamples);
  let probability = 0;
  let state = 0;
  let windows = 0;
  for (let at = 0; at + windowSamples <= pcm.length; at += windowSamples) {
    for (let i = 0; i < windowSamples; i++) row[contextSamples + i] = pcm[at + i]! / 32768;
    const expected = await reference.run(row, referenceState, 1, rowSamples);
    const actual = await network.run(row, networkState, 1, rowSamples);
    probability = Math.max(probability, Math.abs(expected.output[0]! - actual.output[0]!));
    referenceState.set(expected.stateN.subarray(0, SILERO_STATE_SIZE));
    networkState.set(actual.stateN.subarray(0, SILERO_STATE_SIZE));
    for (let i = 0; i < SILERO_STATE_SIZE; i++) {
      state = Math.max(state, Math.abs(referenceState[i]! - networkState[i]!));
    }
    row.copyWithin(0, windowSamples, rowSamples);
    windows++;
  }
  return { probability, state, windows };
}

describe('the Silero network in TypeScript', () => {
  it('gives onnxruntime’s probabilities and states, window by window, at 8 kHz', async () => {
    let windows = 0;
    for (const clip of clips()) {
      const diff = await compare(decodeMulaw(clip.mulaw), 8000);
      expect(diff.probability, clip.name).toBeLessThan(1e-4);
      expect(diff.state, clip.name).toBeLessThan(1e-3);
      windows += diff.windows;
    }
    expect(windows).toBeGreaterThan(4000);
  }, 120_000);

  it('and at 16 kHz', async () => {
    for (const name of ['A01_jfk.ulaw', 'A06_birch_canoe.ulaw', 'A09_noisy_speech_snr0.ulaw']) {
      const pcm = resample(decodeMulaw(readFileSync(`${FIXTURES}${name}`)), 8000, 16000);
      const diff = await compare(pcm, 16000);
      expect(diff.probability, name).toBeLessThan(1e-4);
      expect(diff.state, name).toBeLessThan(1e-3);
    }
  }, 60_000);

  it('takes the STFT by FFT on the model’s basis, and by the basis product on any other', async () => {
    const pcm = decodeMulaw(readFileSync(`${FIXTURES}A01_jfk.ulaw`));
    for (const rate of [8000, 16000] as const) {
      const weights = rateWeights(rate);
      const { taps, bins } = weights;
      // One imaginary row negated: the same magnitudes, but no longer one DFT sign convention.
      const negated = { ...weights, basis: weights.basis.slice() };
      const row = negated.basis.subarray((bins + 5) * taps, (bins + 6) * taps);
      row.set(row.map((value) => -value));
      // One coefficient off by 1e-4 of the window's peak: a hundred times the check's tolerance.
      const perturbed = { ...weights, basis: weights.basis.slice() };
      perturbed.basis[3 * taps + taps / 4] = perturbed.basis[3 * taps + taps / 4]! + 1e-4;
      expect(new SileroNetwork(rate, weights).stftMethod).toBe('fft');
      expect(new SileroNetwork(rate, negated).stftMethod).toBe('gemv');
      expect(new SileroNetwork(rate, perturbed).stftMethod).toBe('gemv');

      // The fallback gives onnxruntime's numbers as the FFT does.
      for (const basis of [negated, perturbed]) {
        const diff = await compare(rate === 8000 ? pcm : resample(pcm, 8000, 16000), rate, basis);
        expect(diff.probability).toBeLessThan(1e-4);
        expect(diff.state).toBeLessThan(1e-3);
      }
      // And the two ways, on the same basis numbers, agree window by window.
      const { windowSamples, contextSamples } = SILERO_GEOMETRY[rate];
      const input = rate === 8000 ? pcm : resample(pcm, 8000, 16000);
      const byFft = new SileroNetwork(rate, weights);
      const byProduct = new SileroNetwork(rate, negated);
      const fftState = new Float32Array(SILERO_STATE_SIZE);
      const productState = new Float32Array(SILERO_STATE_SIZE);
      const window = new Float32Array(contextSamples + windowSamples);
      let largest = 0;
      for (let at = 0; at + windowSamples <= input.length; at += windowSamples) {
        for (let i = 0; i < windowSamples; i++) window[contextSamples + i] = input[at + i]! / 32768;
        const fromFft = byFft.run(window, 0, fftState, 0, 128);
        const fromProduct = byProduct.run(window, 0, productState, 0, 128);
        largest = Math.max(largest, Math.abs(fromFft - fromProduct));
        window.copyWithin(0, windowSamples);
      }
      expect(largest).toBeGreaterThan(0);
      expect(largest).toBeLessThan(1e-5);
    }
  }, 60_000);

  it('runs a batch of streams, each for several steps, as it runs each stream alone', async () => {
    const { windowSamples, contextSamples } = SILERO_GEOMETRY[8000];
    const rowSamples = contextSamples + windowSamples;
    const pcm = decodeMulaw(readFileSync(`${FIXTURES}A01_jfk.ulaw`));
    const streams = 3;
    const steps = 4;
    // [steps, streams, rowSamples]: stream s starts at window 10·s.
    const input = new Float32Array(steps * streams * rowSamples);
    for (let step = 0; step < steps; step++) {
      for (let s = 0; s < streams; s++) {
        const from = (10 * s + step) * windowSamples;
        for (let i = 0; i < rowSamples; i++) input[(step * streams + s) * rowSamples + i] = pcm[from + i]! / 32768;
      }
    }
    const state = new Float32Array(2 * streams * 128).map((_, i) => Math.sin(i) * 0.1);
    const batched = await networkRunner(8000).run(input, state, streams, rowSamples, steps);
    const batchedOutput = Float32Array.from(batched.output);
    const batchedState = Float32Array.from(batched.stateN);
    for (let s = 0; s < streams; s++) {
      const alone = networkRunner(8000);
      const own = new Float32Array(SILERO_STATE_SIZE);
      own.set(state.subarray(s * 128, (s + 1) * 128), 0);
      own.set(state.subarray((streams + s) * 128, (streams + s + 1) * 128), 128);
      let probability = 0;
      for (let step = 0; step < steps; step++) {
        const row = input.subarray((step * streams + s) * rowSamples, (step * streams + s + 1) * rowSamples);
        const result = await alone.run(row, own, 1, rowSamples);
        probability = result.output[0]!;
        own.set(result.stateN.subarray(0, SILERO_STATE_SIZE));
      }
      expect(batchedOutput[s]).toBe(probability);
      expect(batchedState.subarray(s * 128, (s + 1) * 128)).toEqual(own.subarray(0, 128));
      expect(batchedState.subarray((streams + s) * 128, (streams + s + 1) * 128)).toEqual(own.subarray(128));
    }
  });

  it('rejects a window of the wrong size', async () => {
    await expect(networkRunner(8000).run(new Float32Array(300), new Float32Array(256), 1, 300)).rejects.toThrow(
      'expected 288',
    );
  });

  it('makes the same VAD decisions as onnxruntime on every fixture and held-apart clip', async () => {
    // Each clip after a second of silence and followed by one, as a caller's turn comes.
    const silence = Buffer.alloc(8000, 0xff);
    async function decisions(mulaw: Uint8Array, onnx: boolean): Promise<string[]> {
      const events: string[] = [];
      const stream = new VadStream(
        {},
        {
          onSpeechSuspected: (atMs) => events.push(`suspected ${atMs}`),
          onSpeechDismissed: (atMs) => events.push(`dismissed ${atMs}`),
          onSpeechStart: (event) => events.push(`start ${event.atMs}`),
          onSpeechStop: (event) => events.push(`stop ${event.atMs}`),
        },
        onnx ? { session: getSileroSession() } : { batcher: networkSileroBatcher() },
      );
      const audio = Buffer.concat([silence, mulaw, silence]);
      for (let at = 0; at + 160 <= audio.length; at += 160) await stream.pushMulaw(audio.subarray(at, at + 160));
      stream.dispose();
      return events;
    }
    let starts = 0;
    for (const clip of clips()) {
      const expected = await decisions(clip.mulaw, true);
      expect(await decisions(clip.mulaw, false), clip.name).toEqual(expected);
      starts += expected.filter((event) => event.startsWith('start')).length;
    }
    expect(starts).toBeGreaterThan(40);
  }, 180_000);
});
