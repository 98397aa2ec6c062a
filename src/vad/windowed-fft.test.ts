import { describe, expect, it } from 'vitest';
import { rateWeights } from './silero-network.js';
import { createSimdKernels } from './simd-kernels.js';
import { dftWindow, FourFrameFft } from './windowed-fft.js';

/** A basis [2 · bins][taps] of w·cos and sign·w·sin, in float32 like a model's. */
function dftBasis(window: Float32Array, sign: 1 | -1): Float32Array {
  const taps = window.length;
  const bins = taps / 2 + 1;
  const basis = new Float32Array(2 * bins * taps);
  for (let k = 0; k < bins; k++) {
    for (let n = 0; n < taps; n++) {
      const angle = (2 * Math.PI * ((k * n) % taps)) / taps;
      basis[k * taps + n] = window[n]! * Math.cos(angle);
      basis[(bins + k) * taps + n] = sign * window[n]! * Math.sin(angle);
    }
  }
  return basis;
}

describe('the STFT basis check', () => {
  it('finds the Silero model’s basis a periodic Hann-windowed DFT at both rates', () => {
    for (const rate of [8000, 16000] as const) {
      const { basis, bins, taps } = rateWeights(rate);
      const found = dftWindow(basis, bins, taps);
      expect(found, `${rate} Hz`).toBeDefined();
      expect(found!.imaginarySign).toBe(-1);
      expect(found!.window).toEqual(basis.subarray(0, taps));
      for (let n = 0; n < taps; n++) {
        expect(found!.window[n]).toBeCloseTo(0.5 - 0.5 * Math.cos((2 * Math.PI * n) / taps), 6);
      }
    }
  });

  it('takes either sign convention, from the data', () => {
    const window = Float32Array.from({ length: 16 }, (_, n) => 0.3 + Math.sin(n) ** 2);
    expect(dftWindow(dftBasis(window, 1), 9, 16)?.imaginarySign).toBe(1);
    expect(dftWindow(dftBasis(window, -1), 9, 16)?.imaginarySign).toBe(-1);
  });

  it('refuses a basis that is not one windowed DFT', () => {
    const { basis, bins, taps } = rateWeights(8000);
    const perturbed = basis.slice();
    perturbed[7 * taps + 40] = perturbed[7 * taps + 40]! + 1e-5;
    expect(dftWindow(perturbed, bins, taps)).toBeUndefined();
    const mixedSigns = basis.slice();
    const row = mixedSigns.subarray((bins + 9) * taps, (bins + 10) * taps);
    row.set(row.map((value) => -value));
    expect(dftWindow(mixedSigns, bins, taps)).toBeUndefined();
    // Bins swapped: the real rows of bins 2 and 3.
    const swapped = basis.slice();
    swapped.set(basis.subarray(3 * taps, 4 * taps), 2 * taps);
    swapped.set(basis.subarray(2 * taps, 3 * taps), 3 * taps);
    expect(dftWindow(swapped, bins, taps)).toBeUndefined();
    expect(dftWindow(new Float32Array(basis.length), bins, taps)).toBeUndefined();
    expect(dftWindow(basis.subarray(0, 2 * 64 * taps), 64, taps)).toBeUndefined();
    expect(dftWindow(new Float32Array(2 * 7 * 12).fill(1), 7, 12)).toBeUndefined();
  });
});

describe('the four-frame FFT', () => {
  it('gives the magnitudes of a float64 DFT of each windowed frame, to float32 rounding', () => {
    for (const size of [4, 8, 128, 256]) {
      const kernels = createSimdKernels(65536);
      const heap = new Float32Array(kernels.memory.buffer);
      // Arbitrary but repeatable numbers: a window of 0.1..1, samples in -1..1.
      const window = Float32Array.from({ length: size }, (_, n) => 0.55 + 0.45 * Math.sin(n * 2.3 + size));
      const hop = size / 2 + 3;
      const samplesAt = 4;
      for (let i = 0; i < 3 * hop + size; i++) heap[samplesAt + i] = Math.sin(i * 12.9898 + size);
      // Each frame's bins 3 floats apart from the next frame's, to check the stride is honoured.
      const frameFloats = size / 2 + 4;
      const fft = new FourFrameFft(kernels, 16384, window, { at: 32768, frameFloats });
      fft.run(samplesAt, hop);
      for (let frame = 0; frame < 4; frame++) {
        const expected: number[] = [];
        for (let k = 0; k <= size / 2; k++) {
          let re = 0;
          let im = 0;
          for (let n = 0; n < size; n++) {
            const value = window[n]! * heap[samplesAt + frame * hop + n]!;
            const angle = (2 * Math.PI * ((k * n) % size)) / size;
            re += value * Math.cos(angle);
            im -= value * Math.sin(angle);
          }
          expected.push(Math.hypot(re, im));
        }
        const peak = Math.max(...expected);
        expected.forEach((magnitude, k) => {
          const actual = heap[fft.outAt / 4 + frame * frameFloats + k]!;
          expect(Math.abs(actual - magnitude), `N ${size}, frame ${frame}, bin ${k}`).toBeLessThan(1e-6 * peak);
        });
      }
    }
  });

  it('refuses a size that is not a power of two', () => {
    const kernels = createSimdKernels(65536);
    expect(() => new FourFrameFft(kernels, 0, new Float32Array(12), { at: 4096, frameFloats: 8 })).toThrow(
      'not a power of two',
    );
  });
});
