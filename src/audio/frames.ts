/**
 * Telephony framing: carriers send and expect 8 kHz mono mu-law in 20 ms frames (160 bytes).
 */

import { MULAW_SILENCE_BYTE } from './mulaw.js';

export { MULAW_SILENCE_BYTE };

export const FRAME_MS = 20;
export const TELEPHONY_SAMPLE_RATE_HZ = 8000;
/** Samples in one 20 ms frame at 8 kHz (mu-law is one byte per sample, so also the byte count). */
export const SAMPLES_PER_FRAME_8K = (TELEPHONY_SAMPLE_RATE_HZ * FRAME_MS) / 1000;
export const MULAW_FRAME_BYTES = SAMPLES_PER_FRAME_8K;

/**
 * Caller audio goes to a vendor's websocket (speech-to-text, speech-to-speech) in messages of
 * this length: two carrier frames each. Every websocket message costs a masked frame and a write
 * system call on the main thread, 50 a second per call at 20 ms; 40 ms halves that, and the
 * vendors take raw audio in chunks of any length. The price is that a frame may wait 20 ms for
 * its pair, so an interim result can come at most 20 ms later; the end of a turn that we mark
 * (Finalize) costs nothing, because the waiting audio is sent first.
 */
export const VENDOR_AUDIO_MESSAGE_MS = 40;
/** VENDOR_AUDIO_MESSAGE_MS of 8 kHz mu-law. */
export const VENDOR_AUDIO_MESSAGE_MULAW_BYTES = (TELEPHONY_SAMPLE_RATE_HZ * VENDOR_AUDIO_MESSAGE_MS) / 1000;

/** Samples in `durationMs` of audio at `sampleRateHz`, rounded down to whole samples. */
export function samplesForDurationMs(durationMs: number, sampleRateHz: number): number {
  return Math.floor((durationMs * sampleRateHz) / 1000);
}

/** Duration in ms of `sampleCount` samples at `sampleRateHz`. */
export function durationMsForSamples(sampleCount: number, sampleRateHz: number): number {
  return (sampleCount * 1000) / sampleRateHz;
}

/**
 * Cuts a byte stream with arbitrary chunk boundaries (TTS output, resampler output) into whole
 * fixed-size frames, keeping the remainder for the next chunk.
 *
 * Each returned frame is its own copy, because frames are usually queued for paced sending while
 * the producer keeps writing.
 */
export class FrameAccumulator {
  readonly frameBytes: number;
  private readonly pending: Uint8Array;
  private pendingLength = 0;

  constructor(frameBytes: number = MULAW_FRAME_BYTES) {
    if (!Number.isInteger(frameBytes) || frameBytes <= 0) {
      throw new RangeError(`frameBytes must be a positive integer, got ${frameBytes}`);
    }
    this.frameBytes = frameBytes;
    this.pending = new Uint8Array(frameBytes);
  }

  /** Bytes held back because they do not yet fill a frame. */
  get pendingBytes(): number {
    return this.pendingLength;
  }

  /** Adds a chunk and returns the whole frames it completes (possibly none). */
  push(chunk: Uint8Array): Uint8Array[] {
    const frames: Uint8Array[] = [];
    const size = this.frameBytes;
    let offset = 0;

    if (this.pendingLength > 0) {
      const needed = size - this.pendingLength;
      if (chunk.length < needed) {
        this.pending.set(chunk, this.pendingLength);
        this.pendingLength += chunk.length;
        return frames;
      }
      const frame = new Uint8Array(size);
      frame.set(this.pending.subarray(0, this.pendingLength), 0);
      frame.set(chunk.subarray(0, needed), this.pendingLength);
      frames.push(frame);
      this.pendingLength = 0;
      offset = needed;
    }

    while (chunk.length - offset >= size) {
      frames.push(chunk.slice(offset, offset + size));
      offset += size;
    }

    const rest = chunk.length - offset;
    if (rest > 0) {
      this.pending.set(chunk.subarray(offset), 0);
      this.pendingLength = rest;
    }
    return frames;
  }

  /**
   * Returns the held-back tail padded to a whole frame with `padWith` (mu-law silence by
   * default), or null when nothing is held back. The accumulator is empty afterwards.
   */
  flush(padWith: number = MULAW_SILENCE_BYTE): Uint8Array | null {
    if (this.pendingLength === 0) return null;
    const frame = new Uint8Array(this.frameBytes).fill(padWith);
    frame.set(this.pending.subarray(0, this.pendingLength), 0);
    this.pendingLength = 0;
    return frame;
  }

  /** Returns the held-back tail as it is (a copy, not padded), or null when nothing is held back. */
  drain(): Uint8Array | null {
    if (this.pendingLength === 0) return null;
    const tail = this.pending.slice(0, this.pendingLength);
    this.pendingLength = 0;
    return tail;
  }

  /** Drops any held-back bytes (e.g. when playback is interrupted by barge-in). */
  reset(): void {
    this.pendingLength = 0;
  }
}
