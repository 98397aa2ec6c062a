/**
 * The Silero network's short-time Fourier transform as an FFT rather than as the model's matrix
 * product (silero-network.ts). The model stores its STFT as a convolution basis: for each bin k of
 * N/2 + 1, a real filter w[n]·cos(2πkn/N) and an imaginary one ±w[n]·sin(2πkn/N), the window w
 * being a periodic Hann in Silero v6, and the network needs only the magnitudes. Multiplying a
 * frame by that basis is N·(N + 2) multiply-adds; windowing it and taking its real FFT gives the
 * same magnitudes (to float32 rounding, like the product) in about 5·N·log2(N)/2 operations.
 *
 * That holds only while the basis is a windowed DFT, so the network checks its model's basis at
 * load (dftWindow) and keeps the matrix product for any other.
 */

import type { SimdKernels } from './simd-kernels.js';

/**
 * Largest difference allowed between a basis coefficient and w[n]·cos or ±w[n]·sin, as a fraction
 * of the window's peak. Silero v6 stores float32 roundings of those products, which differ from
 * them by at most 6e-8 of the peak; 1e-6 leaves room for another exporter's rounding, and
 * a basis off by more is not the DFT this file computes.
 */
const BASIS_TOLERANCE = 1e-6;

export interface DftWindow {
  /** w[n], the basis's DC real row. */
  window: Float32Array;
  /** +1 when the imaginary rows are w·sin, -1 when they are -w·sin (Silero v6: -1, the usual e^-iωn). */
  imaginarySign: 1 | -1;
}

/**
 * The window of a basis laid out [2 · bins][taps] (the real rows, then the imaginary ones), if the
 * basis is a windowed DFT of `taps` points, `taps` a power of two and `bins` = taps/2 + 1, with one
 * sign for all its imaginary rows; undefined otherwise.
 */
export function dftWindow(basis: Float32Array, bins: number, taps: number): DftWindow | undefined {
  if (taps < 4 || (taps & (taps - 1)) !== 0 || bins !== taps / 2 + 1 || basis.length !== 2 * bins * taps) {
    return undefined;
  }
  const window = basis.slice(0, taps);
  const peak = window.reduce((max, value) => Math.max(max, Math.abs(value)), 0);
  if (!(peak > 0)) return undefined;
  const tolerance = BASIS_TOLERANCE * peak;
  // The angle 2πkn/N taken from kn mod N, so that sin(πn) and the like come out exactly 0.
  const cos = (k: number, n: number) => Math.cos((2 * Math.PI * ((k * n) % taps)) / taps);
  const sin = (k: number, n: number) => Math.sin((2 * Math.PI * ((k * n) % taps)) / taps);
  // The sign, from the first bin's imaginary row: its largest coefficient is w·sin near n = N/4.
  let dot = 0;
  for (let n = 0; n < taps; n++) dot += basis[(bins + 1) * taps + n]! * window[n]! * sin(1, n);
  const imaginarySign = dot < 0 ? -1 : 1;
  for (let k = 0; k < bins; k++) {
    for (let n = 0; n < taps; n++) {
      const w = window[n]!;
      if (Math.abs(basis[k * taps + n]! - w * cos(k, n)) > tolerance) return undefined;
      if (Math.abs(basis[(bins + k) * taps + n]! - imaginarySign * w * sin(k, n)) > tolerance) return undefined;
    }
  }
  return { window, imaginarySign };
}

/** Frames per transform: one per f32x4 lane. The network's STFT has four frames at either rate. */
export const FFT_FRAMES = 4;

/**
 * The magnitudes of four frames' windowed real FFTs of N points (a power of two, at least 4), in
 * the WebAssembly module's memory and on its kernels (simd-kernels.ts): |Σ_n w[n]·x[n]·e^(-2πikn/N)|
 * for the N/2 + 1 bins k, each frame in its own lane.
 *
 * The usual packing: each frame's N real samples become N/2 complex ones z[m] = x[2m] + i·x[2m+1]
 * (here, in bit-reversed order, windowed and halved, which is exact), fft4 takes their complex FFT
 * Z, and spectrum4 splits each bin back out of Z[k] and Z[N/2 - k] (the FFTs of the even and the
 * odd samples, joined with one more twiddle) and takes its magnitude. That is about
 * 5·N·log2(N) float32 operations per frame against N·(N + 2) multiply-adds for the basis product,
 * with four frames in one pass of f32x4 instructions.
 */
export class FourFrameFft {
  /** Bytes of module memory the transform needs, for a layout to set aside (16-byte multiple). */
  static bytes(size: number): number {
    const half = size / 2;
    // points (one more for spectrum4), stage twiddles, split twiddles: 32 bytes each; pack4's table: 48
    return 32 * (half + 1) + 32 * (half - 1) + 32 * (half + 1) + 48 * half;
  }

  readonly size: number;
  /** Byte offset of the magnitudes: frame by frame, each frame's N/2 + 1 bins together. */
  readonly outAt: number;
  /** Bytes from one frame's magnitudes to the next's. */
  private readonly frameBytes: number;
  private readonly kernels: SimdKernels;
  private readonly pointsAt: number;
  private readonly pointsEnd: number;
  private readonly stageTwiddlesAt: number;
  private readonly splitTwiddlesAt: number;
  private readonly packTableAt: number;

  /**
   * `at`: a 16-byte aligned byte offset with `FourFrameFft.bytes(window.length)` bytes free. The
   * magnitudes go to `out`: frame f's bin k at float `out.at / 4 + f · out.frameFloats + k` (the
   * network's first activations, read there by its first convolution).
   */
  constructor(kernels: SimdKernels, at: number, window: ArrayLike<number>, out: { at: number; frameFloats: number }) {
    const size = window.length;
    if (size < 4 || (size & (size - 1)) !== 0) throw new RangeError(`FFT size ${size} is not a power of two ≥ 4`);
    if (at % 16 !== 0) throw new RangeError(`FFT memory at ${at} is not 16-byte aligned`);
    if (out.frameFloats < size / 2 + 1)
      throw new RangeError(`FFT frames of ${out.frameFloats} floats hold no ${size / 2 + 1} bins`);
    const half = size / 2;
    this.size = size;
    this.kernels = kernels;
    const heap = new Float32Array(kernels.memory.buffer);
    this.pointsAt = at;
    this.pointsEnd = at + 32 * half;
    this.stageTwiddlesAt = this.pointsEnd + 32;
    this.splitTwiddlesAt = this.stageTwiddlesAt + 32 * (half - 1);
    this.outAt = out.at;
    this.frameBytes = 4 * out.frameFloats;
    // A twiddle is [cos ×4][-sin ×4]: the same for every lane.
    const putTwiddle = (byteAt: number, angle: number) => {
      heap.fill(Math.cos(angle), byteAt / 4, byteAt / 4 + 4);
      heap.fill(-Math.sin(angle), byteAt / 4 + 4, byteAt / 4 + 8);
    };
    let twiddleAt = this.stageTwiddlesAt;
    for (let span = 2; span <= half; span *= 2) {
      for (let j = 0; j < span / 2; j++, twiddleAt += 32) putTwiddle(twiddleAt, (2 * Math.PI * j) / span);
    }
    for (let k = 0; k <= half; k++) putTwiddle(this.splitTwiddlesAt + 32 * k, (2 * Math.PI * k) / size);
    // pack4's table: point p (bit-reversed order) takes the sample pair m = reverse(p), weighted by
    // w[n] / 2 (spectrum4 leaves out the split's halving).
    this.packTableAt = this.splitTwiddlesAt + 32 * (half + 1);
    const offsets = new Int32Array(kernels.memory.buffer);
    const bits = Math.log2(half);
    for (let m = 0; m < half; m++) {
      let p = 0;
      for (let b = 0; b < bits; b++) p |= ((m >> b) & 1) << (bits - 1 - b);
      const entry = this.packTableAt / 4 + 12 * p;
      offsets[entry] = 8 * m;
      heap.fill(window[2 * m]! / 2, entry + 4, entry + 8);
      heap.fill(window[2 * m + 1]! / 2, entry + 8, entry + 12);
    }
  }

  /**
   * Transforms the four frames that start at heap[framesAt + f·hop] (float offsets into the
   * module's memory); the magnitudes are then at `outAt`, frame by frame.
   */
  run(framesAt: number, hop: number): void {
    this.kernels.pack4(4 * framesAt, this.packTableAt, this.pointsAt, this.pointsEnd, 4 * hop);
    this.kernels.fft4(this.pointsAt, this.stageTwiddlesAt, this.pointsEnd);
    this.kernels.spectrum4(this.pointsAt, this.splitTwiddlesAt, this.outAt, this.pointsEnd, this.frameBytes);
  }
}
