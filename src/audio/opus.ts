import OpusScript from 'opusscript';
import { FRAME_MS, SAMPLES_PER_FRAME_8K, TELEPHONY_SAMPLE_RATE_HZ } from './frames.js';

/**
 * Opus for WebRTC rooms, through `opusscript` (libopus compiled to WebAssembly, shipped inside the
 * npm package: nothing is built or downloaded at install). Both directions run at the pipeline's
 * 8 kHz: libopus decodes any Opus stream straight to 8 kHz (its own band-limiting resampler, so
 * the 48 kHz the browser sends needs no resampler of ours), and encodes the bot's 8 kHz voice as
 * narrowband Opus, which the browser plays at 48 kHz like any other. RTP timestamps stay on the
 * 48 kHz clock Opus always uses on the wire (RFC 7587).
 */

/** Opus's RTP clock, whatever the audio's bandwidth. */
export const OPUS_RTP_CLOCK_HZ = 48000;
/** RTP timestamp ticks in one 20 ms frame. */
export const OPUS_TICKS_PER_FRAME = (OPUS_RTP_CLOCK_HZ * FRAME_MS) / 1000;
/** The bot's voice: narrowband speech is clear well below this (a tenth of the 128 kbit/s of 8 kHz PCM). */
export const OPUS_BOT_BITRATE_BPS = 16_000;
/** The longest packet libopus decodes (120 ms); anything longer is not Opus. */
const MAX_OPUS_PACKET_BYTES = 1275 * 3;

function pcmOf(bytes: Buffer): Int16Array {
  // opusscript returns a fresh Buffer; its bytes are whole samples in host (little-endian) order.
  return new Int16Array(bytes.buffer, bytes.byteOffset, bytes.byteLength >> 1);
}

/** Decodes one participant's Opus packets to 8 kHz mono PCM. One per stream: the decoder has state. */
export class OpusDecoder8k {
  private readonly codec = new OpusScript(TELEPHONY_SAMPLE_RATE_HZ, 1, OpusScript.Application.VOIP);
  private freed = false;

  /** A packet's audio at 8 kHz; undefined for a packet libopus refuses (counted by the caller as loss). */
  decode(packet: Uint8Array): Int16Array | undefined {
    if (this.freed || packet.byteLength === 0 || packet.byteLength > MAX_OPUS_PACKET_BYTES) return undefined;
    try {
      return pcmOf(this.codec.decode(Buffer.from(packet.buffer, packet.byteOffset, packet.byteLength)));
    } catch {
      return undefined;
    }
  }

  free(): void {
    if (this.freed) return;
    this.freed = true;
    this.codec.delete();
  }
}

/** Encodes the bot's 20 ms frames of 8 kHz PCM to Opus packets. */
export class OpusEncoder8k {
  private readonly codec = new OpusScript(TELEPHONY_SAMPLE_RATE_HZ, 1, OpusScript.Application.VOIP);
  private freed = false;

  constructor(bitrateBps = OPUS_BOT_BITRATE_BPS) {
    this.codec.setBitrate(bitrateBps);
  }

  /** One 20 ms frame (160 samples) in, one Opus packet out. */
  encode(pcm8k: Int16Array): Buffer {
    if (pcm8k.length !== SAMPLES_PER_FRAME_8K)
      throw new Error(`an Opus frame is ${SAMPLES_PER_FRAME_8K} samples, got ${pcm8k.length}`);
    if (this.freed) throw new Error('encoder freed');
    return this.codec.encode(Buffer.from(pcm8k.buffer, pcm8k.byteOffset, pcm8k.byteLength), SAMPLES_PER_FRAME_8K);
  }

  free(): void {
    if (this.freed) return;
    this.freed = true;
    this.codec.delete();
  }
}
