import { describe, expect, it } from 'vitest';
import { loudnessVolume, rms, rmsDbfs, rmsLevel } from './energy.js';

function sine(amplitude: number, length = 256, frequencyHz = 440, sampleRateHz = 8000): Int16Array {
  return Int16Array.from({ length }, (_, i) =>
    Math.round(amplitude * Math.sin((2 * Math.PI * frequencyHz * i) / sampleRateHz)),
  );
}

describe('rms', () => {
  it('is 0 for silence and empty frames', () => {
    expect(rms(new Int16Array(160))).toBe(0);
    expect(rms(new Int16Array(0))).toBe(0);
    expect(rmsLevel(new Int16Array(160))).toBe(0);
    expect(rmsDbfs(new Int16Array(160))).toBe(-Infinity);
  });

  it('equals the amplitude for a constant and amplitude/sqrt(2) for a sine', () => {
    expect(rms(new Int16Array(160).fill(-1000))).toBe(1000);
    // 8000 / 440 is not an integer number of periods, so allow a small error.
    expect(rms(sine(10000, 8000))).toBeCloseTo(10000 / Math.SQRT2, -1);
  });

  it('normalises to 0..1 of full scale', () => {
    expect(rmsLevel(new Int16Array(10).fill(-32768))).toBe(1);
    expect(rmsLevel(new Int16Array(10).fill(16384))).toBeCloseTo(0.5, 6);
    expect(rmsDbfs(new Int16Array(10).fill(16384))).toBeCloseTo(-6.02, 2);
  });
});

describe('loudnessVolume', () => {
  it('is 0 for digital silence and clamps at 1', () => {
    expect(loudnessVolume(new Int16Array(256))).toBe(0);
    expect(loudnessVolume(new Int16Array(0))).toBe(0);
    expect(loudnessVolume(new Int16Array(256).fill(32767))).toBe(1);
  });

  it('puts the default 0.6 gate at about -50 dBFS RMS', () => {
    const at50 = Math.round(32768 * 10 ** (-50 / 20));
    expect(loudnessVolume(new Int16Array(256).fill(at50))).toBeCloseTo(0.6, 2);
    expect(loudnessVolume(new Int16Array(256).fill(at50 * 2))).toBeGreaterThan(0.6);
    expect(loudnessVolume(new Int16Array(256).fill(Math.round(at50 / 2)))).toBeLessThan(0.6);
  });

  it('passes ordinary telephone speech levels (-20..-35 dBFS) through the default gate', () => {
    for (const dbfs of [-20, -26, -35]) {
      const amplitude = 32768 * 10 ** (dbfs / 20) * Math.SQRT2;
      const volume = loudnessVolume(sine(amplitude));
      expect(volume).toBeGreaterThan(0.7);
      expect(volume).toBeLessThan(0.95);
    }
  });

  it('rises 0.2 per 20 dB', () => {
    const a = loudnessVolume(new Int16Array(256).fill(100));
    const b = loudnessVolume(new Int16Array(256).fill(1000));
    expect(b - a).toBeCloseTo(0.2, 6);
  });
});
