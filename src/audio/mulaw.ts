/**
 * G.711 mu-law <-> 16-bit linear PCM, by lookup tables.
 *
 * Phone audio arrives and leaves as mu-law every 20 ms for every call, so both directions are a
 * single table lookup per sample: a 256-entry decode table and a 65536-entry encode table
 * (64 KiB, indexed by the int16 bit pattern) built once when the module loads.
 *
 * The companding follows the classic G.711 reference formulation (bias 0x84, clip at 32635,
 * inverted output bits), which is what the telephony carriers and `alawmulaw` use, so encoded
 * bytes are byte-identical to theirs.
 */

/** Added to the magnitude before finding the segment, so segment boundaries fall on powers of 2. */
const MULAW_BIAS = 0x84;
/** Largest magnitude that still fits in segment 7 once the bias is added. */
const MULAW_CLIP = 32635;

/** mu-law byte for digital silence (positive zero); used to pad partial frames. */
export const MULAW_SILENCE_BYTE = 0xff;

function decodeMulawByte(code: number): number {
  const inverted = ~code & 0xff;
  const exponent = (inverted >> 4) & 0x07;
  const mantissa = inverted & 0x0f;
  // Reconstruct the middle of the quantisation step, then remove the bias added on encode.
  const magnitude = (((mantissa << 3) + MULAW_BIAS) << exponent) - MULAW_BIAS;
  return inverted & 0x80 ? -magnitude : magnitude;
}

function encodeMulawSample(sample: number): number {
  const sign = sample < 0 ? 0x80 : 0;
  let biased = (sign ? -sample : sample) + MULAW_BIAS;
  if (biased > MULAW_CLIP) biased = MULAW_CLIP;
  // biased >= 132, so (biased >> 7) >= 1; its highest set bit is the segment (exponent 0..7).
  const exponent = 31 - Math.clz32(biased >> 7);
  const mantissa = (biased >> (exponent + 3)) & 0x0f;
  return ~(sign | (exponent << 4) | mantissa) & 0xff;
}

const DECODE_TABLE: Int16Array = (() => {
  const table = new Int16Array(256);
  for (let code = 0; code < 256; code++) table[code] = decodeMulawByte(code);
  return table;
})();

/** Indexed by `sample & 0xffff`, i.e. the two's-complement bit pattern of the int16. */
const ENCODE_TABLE: Uint8Array = (() => {
  const table = new Uint8Array(65536);
  for (let sample = -32768; sample <= 32767; sample++) table[sample & 0xffff] = encodeMulawSample(sample);
  return table;
})();

/**
 * Decodes mu-law bytes to linear PCM. Pass `out` (at least `bytes.length` long) to reuse a buffer
 * on the per-frame path; the returned array is `out` trimmed to `bytes.length` (a view, no copy).
 */
export function decodeMulaw(bytes: Uint8Array, out?: Int16Array): Int16Array {
  const target = prepareOutput(out, bytes.length, Int16Array);
  const table = DECODE_TABLE;
  for (let i = 0; i < bytes.length; i++) target[i] = table[bytes[i]!]!;
  return target;
}

/**
 * Encodes linear PCM to mu-law bytes. Pass `out` (at least `pcm.length` long) to reuse a buffer
 * on the per-frame path; the returned array is `out` trimmed to `pcm.length` (a view, no copy).
 */
export function encodeMulaw(pcm: Int16Array, out?: Uint8Array): Uint8Array {
  const target = prepareOutput(out, pcm.length, Uint8Array);
  const table = ENCODE_TABLE;
  for (let i = 0; i < pcm.length; i++) target[i] = table[pcm[i]! & 0xffff]!;
  return target;
}

/** Decodes one mu-law byte (0..255) to a linear sample. */
export function mulawByteToLinear(code: number): number {
  return DECODE_TABLE[code & 0xff]!;
}

/** The square of each mu-law byte's linear sample. */
const SQUARED_TABLE = Float64Array.from(DECODE_TABLE, (sample) => sample * sample);

/**
 * Sum of the squares of the linear samples the bytes decode to, without decoding them: the same
 * number as summing over decodeMulaw's output (integers, exact in a double for any frame).
 */
export function mulawSumOfSquares(bytes: Uint8Array): number {
  let sum = 0;
  for (let i = 0; i < bytes.length; i++) sum += SQUARED_TABLE[bytes[i]!]!;
  return sum;
}

/** Encodes one linear sample (clamped to int16) to a mu-law byte. */
export function linearToMulawByte(sample: number): number {
  const clamped = sample > 32767 ? 32767 : sample < -32768 ? -32768 : sample | 0;
  return ENCODE_TABLE[clamped & 0xffff]!;
}

function prepareOutput<T extends Int16Array | Uint8Array>(
  out: T | undefined,
  length: number,
  ctor: { new (length: number): T },
): T {
  if (!out) return new ctor(length);
  if (out.length < length) {
    throw new RangeError(`output buffer holds ${out.length} samples, need ${length}`);
  }
  return (out.length === length ? out : out.subarray(0, length)) as T;
}
