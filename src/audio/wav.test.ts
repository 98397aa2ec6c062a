import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { decodeMulaw, encodeMulaw } from './mulaw.js';
import { downmixToMono, encodeMulawAsPcm16Wav, encodePcm16Wav, parseWav, WavFormatError } from './wav.js';

const FIXTURES = fileURLToPath(new URL('../../fixtures/audio/', import.meta.url));

/** Builds a WAV by hand so the parser is not only tested against its own writer. */
function buildWav(opts: {
  formatTag: number;
  channels?: number;
  sampleRateHz?: number;
  bitsPerSample: number;
  data: Uint8Array;
  extraChunks?: Array<[string, Uint8Array]>;
  extensible?: boolean;
  dataSizeOverride?: number;
}): Uint8Array {
  const channels = opts.channels ?? 1;
  const sampleRateHz = opts.sampleRateHz ?? 8000;
  const blockAlign = (channels * opts.bitsPerSample) / 8;
  const fmt = new Uint8Array(opts.extensible ? 40 : 16);
  const fv = new DataView(fmt.buffer);
  fv.setUint16(0, opts.extensible ? 0xfffe : opts.formatTag, true);
  fv.setUint16(2, channels, true);
  fv.setUint32(4, sampleRateHz, true);
  fv.setUint32(8, sampleRateHz * blockAlign, true);
  fv.setUint16(12, blockAlign, true);
  fv.setUint16(14, opts.bitsPerSample, true);
  if (opts.extensible) {
    fv.setUint16(16, 22, true);
    fv.setUint16(24, opts.formatTag, true);
  }
  const chunks: Array<[string, Uint8Array, number?]> = [
    ...(opts.extraChunks ?? []),
    ['fmt ', fmt],
    ['data', opts.data, opts.dataSizeOverride],
  ];
  const total = 12 + chunks.reduce((n, [, body]) => n + 8 + body.length + (body.length & 1), 0);
  const out = new Uint8Array(total);
  const view = new DataView(out.buffer);
  const tag = (at: number, s: string) => [...s].forEach((c, i) => view.setUint8(at + i, c.charCodeAt(0)));
  tag(0, 'RIFF');
  view.setUint32(4, total - 8, true);
  tag(8, 'WAVE');
  let at = 12;
  for (const [id, body, sizeOverride] of chunks) {
    tag(at, id);
    view.setUint32(at + 4, sizeOverride ?? body.length, true);
    out.set(body, at + 8);
    at += 8 + body.length + (body.length & 1);
  }
  return out;
}

function pcmBytes(samples: number[]): Uint8Array {
  const bytes = new Uint8Array(samples.length * 2);
  const view = new DataView(bytes.buffer);
  samples.forEach((s, i) => view.setInt16(2 * i, s, true));
  return bytes;
}

describe('encodePcm16Wav / parseWav', () => {
  it('round-trips mono 16-bit PCM', () => {
    const samples = Int16Array.from([0, 1, -1, 32767, -32768, 1234, -4321]);
    const wav = encodePcm16Wav(samples, 16000);
    expect(wav.length).toBe(44 + samples.length * 2);
    const parsed = parseWav(wav);
    expect(parsed.sampleRateHz).toBe(16000);
    expect(parsed.channels).toBe(1);
    expect(Array.from(parsed.samples)).toEqual(Array.from(samples));
  });

  it('writes a canonical header', () => {
    const wav = encodePcm16Wav(new Int16Array(10), 8000);
    const view = new DataView(wav.buffer);
    expect(new TextDecoder().decode(wav.subarray(0, 4))).toBe('RIFF');
    expect(view.getUint32(4, true)).toBe(36 + 20);
    expect(view.getUint16(20, true)).toBe(1);
    expect(view.getUint16(22, true)).toBe(1);
    expect(view.getUint32(24, true)).toBe(8000);
    expect(view.getUint32(28, true)).toBe(16000);
    expect(view.getUint16(34, true)).toBe(16);
    expect(view.getUint32(40, true)).toBe(20);
    expect(() => encodePcm16Wav(new Int16Array(1), 0)).toThrow(RangeError);
  });

  it('wraps mu-law bytes as PCM', () => {
    const mulaw = encodeMulaw(Int16Array.from([0, 1000, -1000, 30000]));
    const parsed = parseWav(encodeMulawAsPcm16Wav(mulaw));
    expect(parsed.sampleRateHz).toBe(8000);
    expect(Array.from(parsed.samples)).toEqual(Array.from(decodeMulaw(mulaw)));
  });
});

describe('parseWav', () => {
  it('reads format 7 (mu-law) and decodes it', () => {
    const mulaw = Uint8Array.from([0xff, 0x80, 0x00, 0x7f, 0x10]);
    const parsed = parseWav(buildWav({ formatTag: 7, bitsPerSample: 8, data: mulaw }));
    expect(parsed.sampleRateHz).toBe(8000);
    expect(Array.from(parsed.samples)).toEqual(Array.from(decodeMulaw(mulaw)));
  });

  it('skips unknown chunks (with odd-length padding) and reads WAVE_FORMAT_EXTENSIBLE', () => {
    const wav = buildWav({
      formatTag: 1,
      bitsPerSample: 16,
      data: pcmBytes([5, -5, 7]),
      extraChunks: [['LIST', new Uint8Array(3)]],
      extensible: true,
      sampleRateHz: 22050,
    });
    const parsed = parseWav(wav);
    expect(parsed.sampleRateHz).toBe(22050);
    expect(Array.from(parsed.samples)).toEqual([5, -5, 7]);
  });

  it('tolerates a streaming placeholder data size', () => {
    const wav = buildWav({ formatTag: 1, bitsPerSample: 16, data: pcmBytes([1, 2, 3]), dataSizeOverride: 0xffffffff });
    expect(Array.from(parseWav(wav).samples)).toEqual([1, 2, 3]);
  });

  it('returns interleaved stereo, which downmixToMono averages', () => {
    const wav = buildWav({ formatTag: 1, channels: 2, bitsPerSample: 16, data: pcmBytes([100, 300, -10, -20]) });
    const parsed = parseWav(wav);
    expect(parsed.channels).toBe(2);
    expect(Array.from(downmixToMono(parsed.samples, 2))).toEqual([200, -15]);
    expect(downmixToMono(parsed.samples, 1)).toBe(parsed.samples);
  });

  it.each([
    ['too short', new Uint8Array(4), /too short/],
    ['not RIFF', new TextEncoder().encode('OggS0000WAVEfmt '), /not a RIFF\/WAVE/],
    ['8-bit PCM', buildWav({ formatTag: 1, bitsPerSample: 8, data: new Uint8Array(4) }), /only 16-bit PCM/],
    ['24-bit PCM', buildWav({ formatTag: 1, bitsPerSample: 24, data: new Uint8Array(6) }), /24 bits/],
    ['IEEE float', buildWav({ formatTag: 3, bitsPerSample: 32, data: new Uint8Array(8) }), /format tag 3/],
    ['A-law', buildWav({ formatTag: 6, bitsPerSample: 8, data: new Uint8Array(8) }), /format tag 6/],
  ])('rejects %s with a WavFormatError', (_name, bytes, message) => {
    expect(() => parseWav(bytes)).toThrow(WavFormatError);
    expect(() => parseWav(bytes)).toThrow(message);
  });

  it('rejects a file without a data chunk', () => {
    const wav = buildWav({ formatTag: 1, bitsPerSample: 16, data: new Uint8Array(0) });
    expect(() => parseWav(wav.subarray(0, 12 + 8 + 16))).toThrow(/no data chunk/);
  });
});

describe('fixtures', () => {
  it.each(['A01_jfk', 'A06_birch_canoe', 'A09_noisy_speech_snr0', 'A10_noise_dishes'])(
    '%s.8k.wav parses as 8 kHz mono and matches its .ulaw twin',
    (id) => {
      const wav = parseWav(readFileSync(`${FIXTURES}${id}.8k.wav`));
      const ulaw = readFileSync(`${FIXTURES}${id}.ulaw`);
      expect(wav.sampleRateHz).toBe(8000);
      expect(wav.channels).toBe(1);
      expect(wav.samples.length).toBe(ulaw.length);
      // sox dithered when it wrote the .ulaw, so compare by SNR rather than byte for byte;
      // mu-law quantisation alone allows about 38 dB.
      const decoded = decodeMulaw(ulaw);
      let signal = 0;
      let error = 0;
      for (let i = 0; i < decoded.length; i++) {
        signal += wav.samples[i]! ** 2;
        error += (decoded[i]! - wav.samples[i]!) ** 2;
      }
      expect(10 * Math.log10(signal / error)).toBeGreaterThan(30);
    },
  );

  it('A01_jfk lasts 11 s', () => {
    const wav = parseWav(readFileSync(`${FIXTURES}A01_jfk.8k.wav`));
    expect(wav.samples.length / wav.sampleRateHz).toBeCloseTo(11, 2);
  });
});
