import type { AudioFormat } from './audio-format.js';
import { decodeMulaw, encodeMulaw } from './mulaw.js';
import { StreamingResampler } from './resample.js';

const TELEPHONY: AudioFormat = { encoding: 'mulaw', sampleRateHz: 8000 };

function sameFormat(a: AudioFormat, b: AudioFormat): boolean {
  return a.encoding === b.encoding && a.sampleRateHz === b.sampleRateHz;
}

/**
 * Converts a stream of audio bytes from one format to another, keeping state across chunks
 * (a split 16-bit sample, the resampler's history). Identical formats pass through untouched:
 * the fastest transcode is none.
 */
export class AudioConverter {
  private readonly resampler: StreamingResampler | undefined;
  private readonly passthrough: boolean;
  private oddByte: number | undefined;

  constructor(
    readonly from: AudioFormat,
    readonly to: AudioFormat,
  ) {
    this.passthrough = sameFormat(from, to);
    this.resampler =
      from.sampleRateHz === to.sampleRateHz ? undefined : new StreamingResampler(from.sampleRateHz, to.sampleRateHz);
  }

  convert(bytes: Uint8Array): Uint8Array {
    if (this.passthrough) return bytes;
    let pcm = this.toPcm(bytes);
    if (this.resampler) pcm = this.resampler.process(pcm);
    return this.fromPcm(pcm);
  }

  /** The resampler's tail at the end of a stream. */
  flush(): Uint8Array {
    if (this.passthrough || !this.resampler) return new Uint8Array(0);
    return this.fromPcm(this.resampler.flush());
  }

  private toPcm(bytes: Uint8Array): Int16Array {
    if (this.from.encoding === 'mulaw') return decodeMulaw(bytes);
    let data = bytes;
    if (this.oddByte !== undefined) {
      data = new Uint8Array(bytes.length + 1);
      data[0] = this.oddByte;
      data.set(bytes, 1);
      this.oddByte = undefined;
    }
    const whole = data.length & ~1;
    if (whole < data.length) this.oddByte = data[whole];
    const pcm = new Int16Array(whole / 2);
    const view = new DataView(data.buffer, data.byteOffset, whole);
    for (let i = 0; i < pcm.length; i++) pcm[i] = view.getInt16(i * 2, true);
    return pcm;
  }

  private fromPcm(pcm: Int16Array): Uint8Array {
    if (this.to.encoding === 'mulaw') return encodeMulaw(pcm);
    const out = new Uint8Array(pcm.length * 2);
    const view = new DataView(out.buffer);
    for (let i = 0; i < pcm.length; i++) view.setInt16(i * 2, pcm[i]!, true);
    return out;
  }
}

/** TTS output of any format to the carrier's 8 kHz mu-law. */
export function toTelephony(from: AudioFormat): AudioConverter {
  return new AudioConverter(from, TELEPHONY);
}

/** The carrier's 8 kHz mu-law to what an STT provider takes. */
export function fromTelephony(to: AudioFormat): AudioConverter {
  return new AudioConverter(TELEPHONY, to);
}
