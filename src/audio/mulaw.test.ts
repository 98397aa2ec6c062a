import alawmulaw from 'alawmulaw';
import { describe, expect, it } from 'vitest';
import { decodeMulaw, encodeMulaw, linearToMulawByte, MULAW_SILENCE_BYTE, mulawByteToLinear } from './mulaw.js';

describe('mulaw', () => {
  it('decodes all 256 codes exactly like alawmulaw', () => {
    const codes = new Uint8Array(256).map((_, i) => i);
    const expected = alawmulaw.mulaw.decode(codes);
    expect(Array.from(decodeMulaw(codes))).toEqual(Array.from(expected));
  });

  it('encodes every int16 value exactly like alawmulaw', () => {
    const all = new Int16Array(65536);
    for (let i = 0; i < all.length; i++) all[i] = i - 32768;
    const expected = alawmulaw.mulaw.encode(all);
    const actual = encodeMulaw(all);
    let mismatches = 0;
    for (let i = 0; i < all.length; i++) if (actual[i] !== expected[i]) mismatches++;
    expect(mismatches).toBe(0);
  });

  it('round-trips every code through decode then encode', () => {
    const codes = new Uint8Array(256).map((_, i) => i);
    const back = encodeMulaw(decodeMulaw(codes));
    for (let code = 0; code < 256; code++) {
      // 0x7f is negative zero; it decodes to 0, which encodes as positive zero (0xff).
      expect(back[code]).toBe(code === 0x7f ? 0xff : code);
    }
  });

  it('treats 0xff as silence and keeps the extremes in range', () => {
    expect(mulawByteToLinear(MULAW_SILENCE_BYTE)).toBe(0);
    expect(linearToMulawByte(0)).toBe(MULAW_SILENCE_BYTE);
    expect(mulawByteToLinear(0x00)).toBe(-32124);
    expect(mulawByteToLinear(0x80)).toBe(32124);
    expect(linearToMulawByte(40000)).toBe(linearToMulawByte(32767));
    expect(linearToMulawByte(-40000)).toBe(linearToMulawByte(-32768));
  });

  it('writes into a caller-provided buffer without allocating a new one', () => {
    const frame = new Uint8Array(160).fill(0x80);
    const scratch = new Int16Array(320);
    const pcm = decodeMulaw(frame, scratch);
    expect(pcm.length).toBe(160);
    expect(pcm.buffer).toBe(scratch.buffer);
    expect(scratch[0]).toBe(32124);
    expect(scratch[160]).toBe(0);

    const bytesOut = new Uint8Array(160);
    const encoded = encodeMulaw(pcm, bytesOut);
    expect(encoded).toBe(bytesOut);
    expect(bytesOut.every((b) => b === 0x80)).toBe(true);
  });

  it('rejects an output buffer that is too small', () => {
    expect(() => decodeMulaw(new Uint8Array(160), new Int16Array(100))).toThrow(RangeError);
    expect(() => encodeMulaw(new Int16Array(160), new Uint8Array(10))).toThrow(RangeError);
  });
});
