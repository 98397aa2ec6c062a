import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { SAMPLES_PER_FRAME_8K } from './frames.js';
import { OpusDecoder8k, OpusEncoder8k } from './opus.js';
import { parseWav } from './wav.js';

/**
 * The Opus path of WebRTC rooms, encode → decode at 8 kHz and 16 kbit/s: speech comes back with
 * the level of every 20 ms frame within 1.5 dB on average, and a waveform SNR above 8 dB once the
 * codec's delay is taken out (Opus is a perceptual codec: it keeps what is heard, not the
 * waveform, so SNR understates it); each 20 ms packet stays under 60 bytes. The figures are the
 * ones docs/design.md documents.
 */

function speech8k(): Int16Array {
  const wav = parseWav(
    readFileSync(fileURLToPath(new URL('../../fixtures/audio/A06_birch_canoe.8k.wav', import.meta.url))),
  );
  expect(wav.sampleRateHz).toBe(8000);
  return wav.samples;
}

function roundTrip(input: Int16Array): { output: Int16Array; maxPacketBytes: number } {
  const encoder = new OpusEncoder8k();
  const decoder = new OpusDecoder8k();
  const output = new Int16Array(input.length);
  let maxPacketBytes = 0;
  for (let at = 0; at + SAMPLES_PER_FRAME_8K <= input.length; at += SAMPLES_PER_FRAME_8K) {
    const packet = encoder.encode(input.subarray(at, at + SAMPLES_PER_FRAME_8K));
    maxPacketBytes = Math.max(maxPacketBytes, packet.byteLength);
    output.set(decoder.decode(packet)!, at);
  }
  encoder.free();
  decoder.free();
  return { output, maxPacketBytes };
}

/** SNR in dB at the delay (0-200 samples) where output best matches input. */
function snrDb(input: Int16Array, output: Int16Array): { snr: number; delay: number } {
  let best = { snr: -Infinity, delay: 0 };
  for (let delay = 0; delay < 200; delay++) {
    let signal = 0;
    let noise = 0;
    for (let i = 0; i + delay < output.length; i++) {
      signal += input[i]! ** 2;
      noise += (input[i]! - output[i + delay]!) ** 2;
    }
    const snr = 10 * Math.log10(signal / noise);
    if (snr > best.snr) best = { snr, delay };
  }
  return best;
}

/** Mean difference, dB, between the levels of input and output over the 20 ms frames that carry speech. */
function envelopeErrorDb(input: Int16Array, output: Int16Array, delay: number): number {
  const levelDb = (pcm: Int16Array, from: number) => {
    let sum = 0;
    for (let i = from; i < from + SAMPLES_PER_FRAME_8K; i++) sum += (pcm[i] ?? 0) ** 2;
    return 10 * Math.log10(sum / SAMPLES_PER_FRAME_8K + 1);
  };
  let total = 0;
  let frames = 0;
  for (let at = 0; at + delay + SAMPLES_PER_FRAME_8K <= output.length; at += SAMPLES_PER_FRAME_8K) {
    const level = levelDb(input, at);
    if (level < 50) continue; // quieter than -40 dBFS: the pauses between words
    total += Math.abs(level - levelDb(output, at + delay));
    frames += 1;
  }
  return total / frames;
}

describe('Opus at 8 kHz', () => {
  it('round-trips speech within the documented error, in small packets', () => {
    const input = speech8k();
    const { output, maxPacketBytes } = roundTrip(input);
    const { snr, delay } = snrDb(input, output);
    expect(snr).toBeGreaterThan(8);
    // The codec delay: Opus looks 6.5 ms ahead.
    expect(delay).toBeLessThan(60);
    // What the VAD and the speech-to-text go by, the level of every 20 ms, is kept within 1.5 dB.
    expect(envelopeErrorDb(input, output, delay)).toBeLessThan(1.5);
    expect(maxPacketBytes).toBeLessThan(60);
  });

  it('round-trips a tone with its level kept', () => {
    const input = new Int16Array(8000);
    for (let i = 0; i < input.length; i++) input[i] = Math.round(8000 * Math.sin((2 * Math.PI * 440 * i) / 8000));
    const { output } = roundTrip(input);
    expect(snrDb(input, output).snr).toBeGreaterThan(20);
  });

  it('refuses what is not an Opus packet without throwing, and keeps decoding after it', () => {
    const decoder = new OpusDecoder8k();
    expect(decoder.decode(new Uint8Array(0))).toBeUndefined();
    expect(decoder.decode(new Uint8Array(5000))).toBeUndefined();
    const packet = new OpusEncoder8k().encode(new Int16Array(SAMPLES_PER_FRAME_8K));
    expect(decoder.decode(packet)).toHaveLength(SAMPLES_PER_FRAME_8K);
    decoder.free();
    expect(decoder.decode(packet)).toBeUndefined();
  });

  it('takes exactly one 20 ms frame to encode', () => {
    expect(() => new OpusEncoder8k().encode(new Int16Array(100))).toThrow(/160 samples/);
  });
});
