import { describe, expect, it } from 'vitest';
import {
  durationMsForSamples,
  FRAME_MS,
  FrameAccumulator,
  MULAW_FRAME_BYTES,
  MULAW_SILENCE_BYTE,
  SAMPLES_PER_FRAME_8K,
  samplesForDurationMs,
} from './frames.js';

/** Bytes 0, 1, 2, ... (mod 256) so that order and completeness can be checked. */
function ramp(start: number, length: number): Uint8Array {
  return Uint8Array.from({ length }, (_, i) => (start + i) & 0xff);
}

function concat(frames: Uint8Array[]): number[] {
  return frames.flatMap((f) => Array.from(f));
}

describe('frame constants', () => {
  it('describes 20 ms of 8 kHz mu-law', () => {
    expect(FRAME_MS).toBe(20);
    expect(MULAW_FRAME_BYTES).toBe(160);
    expect(SAMPLES_PER_FRAME_8K).toBe(160);
    expect(samplesForDurationMs(20, 8000)).toBe(160);
    expect(samplesForDurationMs(20, 22050)).toBe(441);
    expect(durationMsForSamples(256, 8000)).toBe(32);
  });
});

describe('FrameAccumulator', () => {
  it('returns nothing until a whole frame is available', () => {
    const acc = new FrameAccumulator();
    expect(acc.push(ramp(0, 159))).toEqual([]);
    expect(acc.pendingBytes).toBe(159);
    const frames = acc.push(ramp(159, 1));
    expect(frames).toHaveLength(1);
    expect(Array.from(frames[0]!)).toEqual(Array.from(ramp(0, 160)));
    expect(acc.pendingBytes).toBe(0);
  });

  it('splits one large chunk into frames and keeps the remainder', () => {
    const acc = new FrameAccumulator();
    const frames = acc.push(ramp(0, 3 * 160 + 7));
    expect(frames).toHaveLength(3);
    expect(frames.every((f) => f.length === 160)).toBe(true);
    expect(acc.pendingBytes).toBe(7);
  });

  it('preserves byte order across odd chunk sizes', () => {
    const acc = new FrameAccumulator();
    const sizes = [1, 0, 37, 160, 161, 3, 319, 2, 500, 77];
    const total = sizes.reduce((a, b) => a + b, 0);
    const frames: Uint8Array[] = [];
    let offset = 0;
    for (const size of sizes) {
      frames.push(...acc.push(ramp(offset, size)));
      offset += size;
    }
    expect(frames).toHaveLength(Math.floor(total / 160));
    expect(acc.pendingBytes).toBe(total % 160);
    const tail = acc.flush();
    expect(tail).not.toBeNull();
    const all = concat([...frames, tail!]);
    expect(all.slice(0, total)).toEqual(Array.from(ramp(0, total)));
  });

  it('pads the flushed tail with mu-law silence by default, or a given byte', () => {
    const acc = new FrameAccumulator();
    acc.push(new Uint8Array([1, 2, 3]));
    const tail = acc.flush()!;
    expect(tail.length).toBe(160);
    expect(Array.from(tail.subarray(0, 3))).toEqual([1, 2, 3]);
    expect(tail.subarray(3).every((b) => b === MULAW_SILENCE_BYTE)).toBe(true);
    expect(acc.pendingBytes).toBe(0);
    expect(acc.flush()).toBeNull();

    acc.push(new Uint8Array([9]));
    const zeroPadded = acc.flush(0)!;
    expect(zeroPadded[0]).toBe(9);
    expect(zeroPadded.subarray(1).every((b) => b === 0)).toBe(true);
  });

  it('returns frames that do not alias the input or each other', () => {
    const acc = new FrameAccumulator();
    const chunk = ramp(0, 320);
    const [a, b] = acc.push(chunk);
    chunk.fill(0);
    expect(a![1]).toBe(1);
    expect(b![0]).toBe(160);
    expect(a!.buffer).not.toBe(b!.buffer);
  });

  it('supports other frame sizes, e.g. 20 ms of 16-bit PCM at 8 kHz', () => {
    const acc = new FrameAccumulator(320);
    expect(acc.push(new Uint8Array(640 + 10))).toHaveLength(2);
    expect(acc.pendingBytes).toBe(10);
    expect(() => new FrameAccumulator(0)).toThrow(RangeError);
  });

  it('drain returns the held-back tail unpadded, as a copy', () => {
    const acc = new FrameAccumulator(320);
    const input = ramp(0, 3 * 160);
    expect(acc.push(input)).toEqual([input.subarray(0, 320)]);
    const tail = acc.drain()!;
    expect(Array.from(tail)).toEqual(Array.from(input.subarray(320)));
    input.fill(0);
    expect(tail[0]).toBe(320 & 0xff);
    expect(acc.pendingBytes).toBe(0);
    expect(acc.drain()).toBeNull();
  });

  it('reset drops the held-back bytes', () => {
    const acc = new FrameAccumulator();
    acc.push(new Uint8Array(100));
    acc.reset();
    expect(acc.pendingBytes).toBe(0);
    expect(acc.flush()).toBeNull();
  });
});
