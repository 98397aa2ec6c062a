import { TELEPHONY_SAMPLE_RATE_HZ } from './frames.js';
import { linearToMulawByte, mulawByteToLinear } from './mulaw.js';

/**
 * In-band DTMF: the keypad's dual tones as audio on the line, which every phone system between
 * the bot and the called party carries (G.711 keeps them intact) and an IVR decodes. Each key is
 * one row and one column frequency (ITU-T Q.23).
 */
const ROWS_HZ = [697, 770, 852, 941];
const COLUMNS_HZ = [1209, 1336, 1477, 1633];
const KEYPAD = ['123A', '456B', '789C', '*0#D'];

/** A key's tone, and the silence after it: long enough for any IVR's detector (Q.24 asks ≥ 40 ms). */
export const DTMF_TONE_MS = 100;
export const DTMF_GAP_MS = 100;
/** `w` in a digit string waits this long, as Twilio's `sendDigits` does. */
export const DTMF_WAIT_MS = 500;
/** Each of the two tones at about -9 dBm0, well above line noise and below clipping. */
const TONE_AMPLITUDE = 0.25 * 32767;

function frequenciesOf(key: string): [number, number] | undefined {
  const upper = key.toUpperCase();
  for (let row = 0; row < 4; row++) {
    const column = KEYPAD[row]!.indexOf(upper);
    if (column >= 0) return [ROWS_HZ[row]!, COLUMNS_HZ[column]!];
  }
  return undefined;
}

/** 8 kHz mu-law of `digits` (0-9, *, #, A-D; `w` pauses), each key a tone then a gap. Throws on other characters. */
export function dtmfToneMulaw(digits: string): Uint8Array {
  const rate = TELEPHONY_SAMPLE_RATE_HZ;
  const toneSamples = (DTMF_TONE_MS * rate) / 1000;
  const gapSamples = (DTMF_GAP_MS * rate) / 1000;
  const waitSamples = (DTMF_WAIT_MS * rate) / 1000;
  let total = 0;
  for (const key of digits) {
    if (key === 'w' || key === 'W') total += waitSamples;
    else if (frequenciesOf(key)) total += toneSamples + gapSamples;
    else throw new Error(`not a DTMF key: ${JSON.stringify(key)}`);
  }
  const out = new Uint8Array(total).fill(linearToMulawByte(0));
  let at = 0;
  for (const key of digits) {
    const pair = frequenciesOf(key);
    if (!pair) {
      at += waitSamples;
      continue;
    }
    for (let i = 0; i < toneSamples; i++) {
      const t = i / rate;
      const sample = TONE_AMPLITUDE * (Math.sin(2 * Math.PI * pair[0] * t) + Math.sin(2 * Math.PI * pair[1] * t));
      out[at + i] = linearToMulawByte(Math.round(sample));
    }
    at += toneSamples + gapSamples;
  }
  return out;
}

/** Goertzel power of `frequencyHz` in `samples` (8 kHz). */
function goertzelPower(samples: Float64Array, frequencyHz: number): number {
  const coefficient = 2 * Math.cos((2 * Math.PI * frequencyHz) / TELEPHONY_SAMPLE_RATE_HZ);
  let previous = 0;
  let beforePrevious = 0;
  for (const sample of samples) {
    const current = sample + coefficient * previous - beforePrevious;
    beforePrevious = previous;
    previous = current;
  }
  return previous * previous + beforePrevious * beforePrevious - coefficient * previous * beforePrevious;
}

/**
 * Hears keys in 8 kHz mu-law, as an IVR does: a key counts once it holds for two 20 ms frames,
 * with one row and one column tone far above the other six and carrying most of the frame's
 * energy (so speech and single tones are not keys), and again only after a frame without it.
 */
export class DtmfDetector {
  private readonly window = new Float64Array(160);
  private filled = 0;
  private candidate: string | undefined;
  private candidateFrames = 0;
  private reported = false;

  /** Feeds audio; returns the keys that began in it. */
  push(mulaw: Uint8Array): string[] {
    const keys: string[] = [];
    for (const byte of mulaw) {
      this.window[this.filled++] = mulawByteToLinear(byte);
      if (this.filled < this.window.length) continue;
      this.filled = 0;
      const key = this.keyOfWindow();
      if (key !== undefined && key === this.candidate) {
        this.candidateFrames += 1;
      } else {
        this.candidate = key;
        this.candidateFrames = key === undefined ? 0 : 1;
        this.reported = false;
      }
      if (this.candidate !== undefined && this.candidateFrames >= 2 && !this.reported) {
        this.reported = true;
        keys.push(this.candidate);
      }
    }
    return keys;
  }

  private keyOfWindow(): string | undefined {
    let energy = 0;
    for (const sample of this.window) energy += sample * sample;
    // Quieter than about -45 dBm0 per sample: no key.
    if (energy / this.window.length < 3000) return undefined;
    const rows = ROWS_HZ.map((hz) => goertzelPower(this.window, hz));
    const columns = COLUMNS_HZ.map((hz) => goertzelPower(this.window, hz));
    const row = strongest(rows);
    const column = strongest(columns);
    if (row === undefined || column === undefined) return undefined;
    // A pure tone of amplitude A over N samples has Goertzel power (A·N/2)²; the frame's energy is A²·N/2.
    const tonesEnergy = ((rows[row]! + columns[column]!) * 2) / this.window.length;
    if (tonesEnergy < 0.6 * energy) return undefined;
    return KEYPAD[row]![column]!;
  }
}

/** The index of the one value far above the others (8x, about 9 dB), or undefined. */
function strongest(powers: number[]): number | undefined {
  let best = 0;
  for (let i = 1; i < powers.length; i++) if (powers[i]! > powers[best]!) best = i;
  for (let i = 0; i < powers.length; i++) if (i !== best && powers[i]! * 8 > powers[best]!) return undefined;
  return best;
}
