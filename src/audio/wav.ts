/**
 * Minimal WAV (RIFF/WAVE) reading and writing for the formats this service meets: 16-bit PCM
 * (TTS engines, fixtures, recordings) and 8-bit G.711 mu-law (format 7, telephone captures).
 */

import { TELEPHONY_SAMPLE_RATE_HZ } from './frames.js';
import { decodeMulaw, encodeMulaw } from './mulaw.js';
import { resample } from './resample.js';

const WAVE_FORMAT_PCM = 1;
const WAVE_FORMAT_MULAW = 7;
const WAVE_FORMAT_EXTENSIBLE = 0xfffe;
const PCM_HEADER_BYTES = 44;

export interface WavAudio {
  sampleRateHz: number;
  channels: number;
  /** 16-bit samples; interleaved (L R L R ...) when channels > 1. */
  samples: Int16Array;
}

/** The input is not a WAV file this module can read; the message says why. */
export class WavFormatError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'WavFormatError';
  }
}

function fourCC(view: DataView, offset: number): string {
  return String.fromCharCode(
    view.getUint8(offset),
    view.getUint8(offset + 1),
    view.getUint8(offset + 2),
    view.getUint8(offset + 3),
  );
}

interface FmtChunk {
  formatTag: number;
  channels: number;
  sampleRateHz: number;
  bitsPerSample: number;
}

function readFmt(view: DataView, offset: number, size: number): FmtChunk {
  if (size < 16) throw new WavFormatError(`fmt chunk is ${size} bytes, expected at least 16`);
  let formatTag = view.getUint16(offset, true);
  const channels = view.getUint16(offset + 2, true);
  const sampleRateHz = view.getUint32(offset + 4, true);
  const bitsPerSample = view.getUint16(offset + 14, true);
  if (formatTag === WAVE_FORMAT_EXTENSIBLE) {
    // WAVE_FORMAT_EXTENSIBLE keeps the real format in the first two bytes of the SubFormat GUID.
    if (size < 40) throw new WavFormatError('WAVE_FORMAT_EXTENSIBLE fmt chunk is too short');
    formatTag = view.getUint16(offset + 24, true);
  }
  return { formatTag, channels, sampleRateHz, bitsPerSample };
}

/**
 * Parses a WAV file held in memory. Accepts 16-bit PCM and 8-bit mu-law (decoded to 16-bit), any
 * channel count and sample rate. Throws WavFormatError for anything else.
 */
export function parseWav(bytes: Uint8Array): WavAudio {
  if (bytes.length < 12) throw new WavFormatError(`${bytes.length} bytes is too short for a WAV header`);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (fourCC(view, 0) !== 'RIFF' || fourCC(view, 8) !== 'WAVE') {
    throw new WavFormatError('not a RIFF/WAVE file (missing "RIFF" or "WAVE" tag)');
  }

  let fmt: FmtChunk | null = null;
  let dataOffset = -1;
  let dataSize = 0;
  let offset = 12;
  while (offset + 8 <= bytes.length) {
    const id = fourCC(view, offset);
    const size = view.getUint32(offset + 4, true);
    const body = offset + 8;
    if (id === 'fmt ') {
      if (body + size > bytes.length) throw new WavFormatError('fmt chunk runs past the end of the file');
      fmt = readFmt(view, body, size);
    } else if (id === 'data') {
      dataOffset = body;
      // Streamed WAVs often carry a placeholder size (0 or 0xFFFFFFFF); trust the bytes present.
      dataSize = size === 0 || body + size > bytes.length ? bytes.length - body : size;
      break;
    }
    // Chunks are padded to an even length.
    offset = body + size + (size & 1);
  }

  if (!fmt) throw new WavFormatError('no fmt chunk before the data chunk');
  if (dataOffset < 0) throw new WavFormatError('no data chunk');
  const { formatTag, channels, sampleRateHz, bitsPerSample } = fmt;
  if (channels < 1) throw new WavFormatError('fmt chunk declares 0 channels');
  if (sampleRateHz < 1) throw new WavFormatError('fmt chunk declares a sample rate of 0');

  if (formatTag === WAVE_FORMAT_PCM) {
    if (bitsPerSample !== 16) {
      throw new WavFormatError(`unsupported PCM sample size: ${bitsPerSample} bits (only 16-bit PCM is supported)`);
    }
    const count = Math.floor(dataSize / 2);
    const samples = new Int16Array(count);
    for (let i = 0; i < count; i++) samples[i] = view.getInt16(dataOffset + 2 * i, true);
    return { sampleRateHz, channels, samples };
  }
  if (formatTag === WAVE_FORMAT_MULAW) {
    if (bitsPerSample !== 8) {
      throw new WavFormatError(`unsupported mu-law sample size: ${bitsPerSample} bits (expected 8)`);
    }
    const samples = decodeMulaw(bytes.subarray(dataOffset, dataOffset + dataSize));
    return { sampleRateHz, channels, samples };
  }
  throw new WavFormatError(`unsupported WAV format tag ${formatTag} (supported: 1 = 16-bit PCM, 7 = mu-law)`);
}

/** Averages interleaved channels into one. Returns the input itself when it is already mono. */
export function downmixToMono(samples: Int16Array, channels: number): Int16Array {
  if (channels === 1) return samples;
  const frames = Math.floor(samples.length / channels);
  const mono = new Int16Array(frames);
  for (let f = 0; f < frames; f++) {
    let sum = 0;
    for (let c = 0; c < channels; c++) sum += samples[f * channels + c]!;
    mono[f] = Math.round(sum / channels);
  }
  return mono;
}

/** Encodes mono 16-bit PCM as a canonical 44-byte-header WAV file. */
export function encodePcm16Wav(samples: Int16Array, sampleRateHz: number): Uint8Array {
  if (!Number.isInteger(sampleRateHz) || sampleRateHz <= 0) {
    throw new RangeError(`sampleRateHz must be a positive integer, got ${sampleRateHz}`);
  }
  const dataBytes = samples.length * 2;
  const bytes = new Uint8Array(PCM_HEADER_BYTES + dataBytes);
  const view = new DataView(bytes.buffer);
  const writeTag = (offset: number, tag: string) => {
    for (let i = 0; i < 4; i++) view.setUint8(offset + i, tag.charCodeAt(i));
  };
  writeTag(0, 'RIFF');
  view.setUint32(4, 36 + dataBytes, true);
  writeTag(8, 'WAVE');
  writeTag(12, 'fmt ');
  view.setUint32(16, 16, true);
  view.setUint16(20, WAVE_FORMAT_PCM, true);
  view.setUint16(22, 1, true); // channels
  view.setUint32(24, sampleRateHz, true);
  view.setUint32(28, sampleRateHz * 2, true); // byte rate
  view.setUint16(32, 2, true); // block align
  view.setUint16(34, 16, true); // bits per sample
  writeTag(36, 'data');
  view.setUint32(40, dataBytes, true);
  for (let i = 0; i < samples.length; i++) view.setInt16(PCM_HEADER_BYTES + 2 * i, samples[i]!, true);
  return bytes;
}

/** Decodes raw mu-law bytes (e.g. a captured call leg) and wraps them as a 16-bit PCM WAV. */
export function encodeMulawAsPcm16Wav(mulawBytes: Uint8Array, sampleRateHz = 8000): Uint8Array {
  return encodePcm16Wav(decodeMulaw(mulawBytes), sampleRateHz);
}

/** Any WAV this module reads, as the 8 kHz mono mu-law a phone line carries. */
export function wavToMulaw(wavBytes: Uint8Array): Uint8Array {
  const wav = parseWav(wavBytes);
  const mono = downmixToMono(wav.samples, wav.channels);
  return encodeMulaw(resample(mono, wav.sampleRateHz, TELEPHONY_SAMPLE_RATE_HZ));
}
