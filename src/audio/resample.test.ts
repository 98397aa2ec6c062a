import { describe, expect, it } from 'vitest';
import { rms } from './energy.js';
import { resample, StreamingResampler } from './resample.js';

function sine(frequencyHz: number, sampleRateHz: number, durationMs: number, amplitude = 10000): Int16Array {
  const length = Math.round((sampleRateHz * durationMs) / 1000);
  return Int16Array.from({ length }, (_, i) =>
    Math.round(amplitude * Math.sin((2 * Math.PI * frequencyHz * i) / sampleRateHz)),
  );
}

/** Sign changes from negative to non-negative; one per period of a sine. */
function risingZeroCrossings(samples: Int16Array): number {
  let count = 0;
  for (let i = 1; i < samples.length; i++) if (samples[i - 1]! < 0 && samples[i]! >= 0) count++;
  return count;
}

/** Feeds `input` in chunks of `chunkSamples` and returns every chunk's output plus the flushed tail. */
function streamInChunks(resampler: StreamingResampler, input: Int16Array, chunkSamples: number) {
  const outputs: Int16Array[] = [];
  for (let offset = 0; offset < input.length; offset += chunkSamples) {
    outputs.push(resampler.process(input.subarray(offset, offset + chunkSamples)));
  }
  const tail = resampler.flush();
  const joined = new Int16Array(outputs.reduce((n, o) => n + o.length, 0) + tail.length);
  let at = 0;
  for (const o of [...outputs, tail]) {
    joined.set(o, at);
    at += o.length;
  }
  return { outputs, tail, joined };
}

const PAIRS: Array<[number, number]> = [
  [8000, 16000],
  [16000, 8000],
  [8000, 24000],
  [24000, 8000],
  [22050, 8000],
  [44100, 8000],
  [48000, 8000],
  [8000, 44100],
];

describe('StreamingResampler', () => {
  it.each(PAIRS)('%i Hz -> %i Hz: total output length matches the rate ratio', (inputRateHz, outputRateHz) => {
    const resampler = new StreamingResampler(inputRateHz, outputRateHz);
    const input = sine(440, inputRateHz, 1000);
    const chunk = Math.round(inputRateHz / 50); // 20 ms
    const { joined } = streamInChunks(resampler, input, chunk);
    expect(joined.length).toBe(Math.ceil((input.length * outputRateHz) / inputRateHz));
  });

  it('emits exactly 320 samples per 20 ms frame at 8 -> 16 kHz once primed', () => {
    const resampler = new StreamingResampler(8000, 16000);
    const lengths = [];
    for (let i = 0; i < 10; i++) lengths.push(resampler.process(new Int16Array(160)).length);
    // The first frame is short by the lookahead (2 outputs per held-back input sample).
    expect(lengths[0]).toBe(2 * (160 - resampler.lookaheadSamples));
    expect(lengths.slice(1).every((n) => n === 320)).toBe(true);
  });

  it('emits exactly 160 samples per 20 ms chunk at 24 and 22.05 kHz -> 8 kHz once primed', () => {
    for (const [rate, chunk] of [
      [24000, 480],
      [22050, 441],
    ] as const) {
      const resampler = new StreamingResampler(rate, 8000);
      const lengths = [];
      for (let i = 0; i < 10; i++) lengths.push(resampler.process(new Int16Array(chunk)).length);
      expect(lengths.slice(1).every((n) => n === 160)).toBe(true);
    }
  });

  it.each(PAIRS)('%i Hz -> %i Hz keeps a 440 Hz sine at 440 Hz and its amplitude', (inputRateHz, outputRateHz) => {
    const input = sine(440, inputRateHz, 1000);
    const resampler = new StreamingResampler(inputRateHz, outputRateHz);
    const { joined } = streamInChunks(resampler, input, 137); // deliberately odd chunk size
    expect(Math.abs(risingZeroCrossings(joined) - 440)).toBeLessThanOrEqual(1);
    // Compare the steady-state middle, away from the start-up and tail transients.
    const middle = joined.subarray(Math.floor(joined.length * 0.1), Math.floor(joined.length * 0.9));
    expect(rms(middle) / (10000 / Math.SQRT2)).toBeGreaterThan(0.97);
    expect(rms(middle) / (10000 / Math.SQRT2)).toBeLessThan(1.03);
  });

  it('gives the same result whatever the chunk size (no seams at chunk boundaries)', () => {
    const input = sine(1000, 24000, 300);
    const whole = streamInChunks(new StreamingResampler(24000, 8000), input, input.length).joined;
    for (const chunk of [1, 7, 480, 1001]) {
      const chunked = streamInChunks(new StreamingResampler(24000, 8000), input, chunk).joined;
      expect(chunked.length).toBe(whole.length);
      let maxDiff = 0;
      for (let i = 0; i < whole.length; i++) maxDiff = Math.max(maxDiff, Math.abs(chunked[i]! - whole[i]!));
      expect(maxDiff).toBeLessThanOrEqual(1);
    }
  });

  it('has no jumps at 20 ms chunk boundaries for a continuous tone', () => {
    const input = sine(440, 16000, 500);
    const { joined } = streamInChunks(new StreamingResampler(16000, 8000), input, 320);
    // The largest step between neighbouring samples of a 10000-amplitude 440 Hz sine at 8 kHz
    // is 10000 * 2 * sin(pi * 440 / 8000) ~= 3450; a seam would show as a bigger jump.
    let maxStep = 0;
    for (let i = 400; i < joined.length - 400; i++) maxStep = Math.max(maxStep, Math.abs(joined[i]! - joined[i - 1]!));
    expect(maxStep).toBeLessThan(3500);
  });

  it('removes content above the new Nyquist when downsampling (no aliasing)', () => {
    // 5 kHz at 24 kHz would alias to 3 kHz at 8 kHz without the low-pass.
    const out = resample(sine(5000, 24000, 500), 24000, 8000);
    const middle = out.subarray(400, out.length - 400);
    expect(rms(middle)).toBeLessThan(10000 * 0.01);
    // 11 kHz at 44.1 kHz would alias to 3 kHz at 8 kHz.
    const out44 = resample(sine(11000, 44100, 500), 44100, 8000);
    expect(rms(out44.subarray(400, out44.length - 400))).toBeLessThan(10000 * 0.01);
  });

  it('writes into a caller buffer and reports how many samples it wrote', () => {
    const resampler = new StreamingResampler(8000, 16000);
    const out = new Int16Array(640);
    resampler.processInto(new Int16Array(160), out);
    expect(resampler.processInto(new Int16Array(160).fill(1000), out)).toBe(320);
    expect(() => resampler.processInto(new Int16Array(160), new Int16Array(10))).toThrow(RangeError);
  });

  it('passes audio through unchanged when the rates are equal', () => {
    const input = sine(440, 8000, 100);
    const resampler = new StreamingResampler(8000, 8000);
    expect(Array.from(resampler.process(input))).toEqual(Array.from(input));
    expect(resampler.flush().length).toBe(0);
    expect(Array.from(resample(input, 8000, 8000))).toEqual(Array.from(input));
  });

  it('starts a fresh stream after reset', () => {
    const resampler = new StreamingResampler(16000, 8000);
    const input = sine(440, 16000, 100);
    const first = streamInChunks(resampler, input, 320).joined;
    resampler.process(new Int16Array(500).fill(20000));
    resampler.reset();
    const second = streamInChunks(resampler, input, 320).joined;
    expect(Array.from(second)).toEqual(Array.from(first));
  });

  it('rejects invalid rates', () => {
    expect(() => new StreamingResampler(0, 8000)).toThrow(RangeError);
    expect(() => new StreamingResampler(8000, 7999.5)).toThrow(RangeError);
    expect(() => new StreamingResampler(8000, 7919)).toThrow(/too many filter phases/);
  });
});
