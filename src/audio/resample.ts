/**
 * Streaming sample-rate conversion for 16-bit mono PCM.
 *
 * Method: rational polyphase resampling with a Blackman-windowed sinc kernel. The ratio
 * outputRate/inputRate is reduced to L/M; output sample n sits at input time n*M/L, and is the
 * dot product of the neighbouring input samples with one of L precomputed kernel phases.
 *
 * Why not plain linear interpolation: the main path is 16/22.05/24/44.1 kHz TTS down to 8 kHz,
 * where averaging or linear interpolation leaves audible aliasing (energy above 4 kHz folds back
 * into the speech band). A windowed sinc with the cutoff at 90% of the lower Nyquist removes it,
 * and with 16 zero crossings per side it costs ~40-200 multiply-adds per output sample, which
 * is negligible at telephone rates.
 *
 * Streaming: the resampler keeps the kernel's history between chunks, so 20 ms chunks come out
 * as one continuous signal with no clicks at chunk boundaries. The price is a fixed lookahead of
 * ~2.2 ms of input: each call emits only the outputs whose kernel span is fully available, and
 * `flush()` emits the rest at the end of a stream. In steady state, a chunk whose length is a
 * multiple of M yields exactly length*L/M samples (e.g. 160 -> 320 for 8 -> 16 kHz).
 */

/** Zero crossings of the sinc kept on each side of the centre; sets the transition-band width. */
const ZERO_CROSSINGS = 16;
/** Cutoff as a fraction of the lower of the two Nyquist frequencies (3.6 kHz when one side is 8 kHz). */
const ROLLOFF = 0.9;
/** Guards against rate pairs whose reduced ratio would need a huge phase table. */
const MAX_PHASES = 4096;

interface Kernel {
  /** Interpolation factor L (number of phases). */
  readonly up: number;
  /** Decimation factor M. */
  readonly down: number;
  /** Half the kernel length, in input samples. */
  readonly halfTaps: number;
  /** L rows of 2*halfTaps coefficients; row p is for fractional position p/L. */
  readonly coefficients: Float32Array;
}

/** Kernels depend only on the rate pair, so calls sharing a pair share one table. */
const kernelCache = new Map<string, Kernel>();

function gcd(a: number, b: number): number {
  while (b !== 0) [a, b] = [b, a % b];
  return a;
}

function buildKernel(up: number, down: number): Kernel {
  // Cutoff in cycles per input sample, times 2 (1 = input Nyquist).
  const cutoff = ROLLOFF * Math.min(1, up / down);
  const halfTaps = Math.ceil(ZERO_CROSSINGS / cutoff);
  const taps = 2 * halfTaps;
  const coefficients = new Float32Array(up * taps);
  for (let phase = 0; phase < up; phase++) {
    const row = phase * taps;
    let sum = 0;
    for (let k = 0; k < taps; k++) {
      // Distance (in input samples) from the output position to input sample (base + k).
      const t = phase / up + (halfTaps - 1) - k;
      const x = cutoff * t;
      const sinc = x === 0 ? 1 : Math.sin(Math.PI * x) / (Math.PI * x);
      const w = t / halfTaps; // -1..1 across the kernel span
      const window = Math.abs(w) >= 1 ? 0 : 0.42 + 0.5 * Math.cos(Math.PI * w) + 0.08 * Math.cos(2 * Math.PI * w);
      const value = cutoff * sinc * window;
      coefficients[row + k] = value;
      sum += value;
    }
    // Unit DC gain for every phase, otherwise the phases' small gain differences become a tone.
    for (let k = 0; k < taps; k++) coefficients[row + k] = coefficients[row + k]! / sum;
  }
  return { up, down, halfTaps, coefficients };
}

function kernelFor(inputRateHz: number, outputRateHz: number): Kernel {
  const divisor = gcd(inputRateHz, outputRateHz);
  const up = outputRateHz / divisor;
  const down = inputRateHz / divisor;
  if (up > MAX_PHASES) {
    throw new RangeError(
      `cannot resample ${inputRateHz} Hz -> ${outputRateHz} Hz: ratio ${up}/${down} needs too many filter phases`,
    );
  }
  const key = `${up}:${down}`;
  let kernel = kernelCache.get(key);
  if (!kernel) {
    kernel = buildKernel(up, down);
    kernelCache.set(key, kernel);
  }
  return kernel;
}

function assertRate(name: string, rateHz: number): void {
  if (!Number.isInteger(rateHz) || rateHz <= 0) {
    throw new RangeError(`${name} must be a positive integer number of Hz, got ${rateHz}`);
  }
}

/**
 * One direction of one stream (e.g. a call's TTS output, 24 kHz -> 8 kHz). Not shareable between
 * streams: it holds the tail of the previous chunk.
 */
export class StreamingResampler {
  readonly inputRateHz: number;
  readonly outputRateHz: number;
  private readonly kernel: Kernel | null;
  /** Pending input (as float, int16 scale), starting halfTaps-1 samples before the next output. */
  private history: Float32Array;
  private historyLength = 0;
  /** Index into `history` of the input sample at or just before the next output position. */
  private index = 0;
  /** Fractional part of the next output position, in units of 1/L input samples. */
  private phase = 0;
  private inputSamplesTotal = 0;
  private outputSamplesTotal = 0;

  constructor(inputRateHz: number, outputRateHz: number) {
    assertRate('inputRateHz', inputRateHz);
    assertRate('outputRateHz', outputRateHz);
    this.inputRateHz = inputRateHz;
    this.outputRateHz = outputRateHz;
    this.kernel = inputRateHz === outputRateHz ? null : kernelFor(inputRateHz, outputRateHz);
    this.history = new Float32Array(this.kernel ? 4 * this.kernel.halfTaps + 1024 : 0);
    this.reset();
  }

  /** Input samples that the kernel needs to see beyond an output position before emitting it. */
  get lookaheadSamples(): number {
    return this.kernel ? this.kernel.halfTaps : 0;
  }

  /** Exact number of samples the next `process`/`processInto` call will return for this input length. */
  outputLengthFor(inputLength: number): number {
    if (!this.kernel) return inputLength;
    return this.readyOutputs(this.historyLength + inputLength);
  }

  /** Resamples one chunk into a new array. */
  process(input: Int16Array): Int16Array {
    const out = new Int16Array(this.outputLengthFor(input.length));
    this.processInto(input, out);
    return out;
  }

  /**
   * Resamples one chunk into `out` (reused by hot-path callers) and returns how many samples were
   * written. `out` must hold at least `outputLengthFor(input.length)` samples.
   */
  processInto(input: Int16Array, out: Int16Array): number {
    const needed = this.outputLengthFor(input.length);
    if (out.length < needed) {
      throw new RangeError(`output buffer holds ${out.length} samples, need ${needed}`);
    }
    this.inputSamplesTotal += input.length;
    if (!this.kernel) {
      out.set(input, 0);
      this.outputSamplesTotal += input.length;
      return input.length;
    }
    this.append(input, 0);
    return this.emit(out, needed);
  }

  /**
   * Ends the stream: returns the outputs still held back by the lookahead (the input is treated as
   * followed by silence) so that the total output length is ceil(totalInput * out/in). The
   * resampler is reset afterwards and can start a new stream.
   */
  flush(): Int16Array {
    if (!this.kernel) {
      this.reset();
      return new Int16Array(0);
    }
    const { up, down, halfTaps } = this.kernel;
    const expectedTotal = Math.ceil((this.inputSamplesTotal * up) / down);
    const remaining = Math.max(0, expectedTotal - this.outputSamplesTotal);
    this.append(null, halfTaps + 1);
    const out = new Int16Array(Math.min(remaining, this.readyOutputs(this.historyLength)));
    this.emit(out, out.length);
    this.reset();
    return out;
  }

  /** Forgets all buffered input, e.g. when playback is cut off by barge-in. */
  reset(): void {
    const halfTaps = this.kernel ? this.kernel.halfTaps : 0;
    // Start with halfTaps-1 zeros before the first input sample, so the first output (at input
    // time 0) has a full kernel span.
    const lead = Math.max(0, halfTaps - 1);
    this.history.fill(0, 0, lead);
    this.historyLength = lead;
    this.index = lead;
    this.phase = 0;
    this.inputSamplesTotal = 0;
    this.outputSamplesTotal = 0;
  }

  /** Outputs computable when `available` history samples are present. */
  private readyOutputs(available: number): number {
    const { up, down, halfTaps } = this.kernel!;
    // Output at (index, phase) is ready when index + halfTaps < available.
    const limit = (available - halfTaps) * up; // exclusive bound on index*up + phase
    const position = this.index * up + this.phase;
    return limit > position ? Math.ceil((limit - position) / down) : 0;
  }

  /** Appends `input`, or `zeroCount` zeros when input is null. */
  private append(input: Int16Array | null, zeroCount: number): void {
    const count = input ? input.length : zeroCount;
    const required = this.historyLength + count;
    if (required > this.history.length) {
      const grown = new Float32Array(Math.max(required, this.history.length * 2));
      grown.set(this.history.subarray(0, this.historyLength), 0);
      this.history = grown;
    }
    if (input) {
      const history = this.history;
      const offset = this.historyLength;
      for (let i = 0; i < count; i++) history[offset + i] = input[i]!;
    } else {
      this.history.fill(0, this.historyLength, required);
    }
    this.historyLength = required;
  }

  private emit(out: Int16Array, count: number): number {
    const { up, down, halfTaps, coefficients } = this.kernel!;
    const taps = 2 * halfTaps;
    const wholeStep = Math.floor(down / up);
    const fractionStep = down % up;
    const history = this.history;
    let index = this.index;
    let phase = this.phase;

    for (let n = 0; n < count; n++) {
      const base = index - halfTaps + 1;
      const row = phase * taps;
      let acc = 0;
      for (let k = 0; k < taps; k++) acc += history[base + k]! * coefficients[row + k]!;
      const rounded = Math.round(acc);
      out[n] = rounded > 32767 ? 32767 : Math.max(rounded, -32768);
      index += wholeStep;
      phase += fractionStep;
      if (phase >= up) {
        phase -= up;
        index++;
      }
    }

    // Drop input that no future output can reach, keeping halfTaps-1 samples before `index`.
    const drop = Math.min(index - (halfTaps - 1), this.historyLength);
    if (drop > 0) {
      history.copyWithin(0, drop, this.historyLength);
      this.historyLength -= drop;
      index -= drop;
    }
    this.index = index;
    this.phase = phase;
    this.outputSamplesTotal += count;
    return count;
  }
}

/** Resamples a whole clip in one go (process + flush). */
export function resample(samples: Int16Array, inputRateHz: number, outputRateHz: number): Int16Array {
  if (inputRateHz === outputRateHz) {
    assertRate('inputRateHz', inputRateHz);
    return samples.slice();
  }
  const resampler = new StreamingResampler(inputRateHz, outputRateHz);
  const head = resampler.process(samples);
  const tail = resampler.flush();
  const out = new Int16Array(head.length + tail.length);
  out.set(head, 0);
  out.set(tail, head.length);
  return out;
}
