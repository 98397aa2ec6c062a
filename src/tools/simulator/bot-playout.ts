import { MULAW_FRAME_BYTES } from '../../audio/frames.js';

/**
 * The carrier's outbound buffer for one call, as Twilio behaves: bot audio plays in arrival
 * order at real-time rate, a mark comes back once everything queued before it has finished
 * playing (at once when nothing is queued), and `clear` drops the buffer and returns every
 * pending mark immediately.
 *
 * It has no timers: the call's clock calls `tick()` every 20 ms. A tick finishes the frame that
 * was playing (releasing marks it completes) and starts the next one, so audio that arrives
 * between ticks starts on the next tick, like a jitter buffer of at most one frame.
 */

/** Twilio discards media beyond 10 minutes of buffered audio (warning 31931). */
export const MAX_BUFFERED_BYTES = 10 * 60 * 8000;

const INITIAL_CAPACITY_BYTES = 64 * 1024;

export type EnqueueResult = 'ok' | 'invalid-base64' | 'overflow';

export class BotPlayout {
  /** Decoded audio waiting to play lives in buffer[readPos, writePos). */
  private buffer = Buffer.allocUnsafe(INITIAL_CAPACITY_BYTES);
  private readPos = 0;
  private writePos = 0;
  /** Bytes of the frame playing now (started on the last tick). */
  private inFlightBytes = 0;
  /** Stream positions, in bytes since the call began: everything enqueued, everything finished. */
  private enqueuedTotal = 0;
  private finishedTotal = 0;
  /** Marks waiting for their audio, FIFO, with the stream position each one follows. */
  private markNames: string[] = [];
  private markPositions: number[] = [];
  private markHead = 0;

  /** `onMarkPlayed` is called, in order, for each mark the carrier would echo now. */
  constructor(private readonly onMarkPlayed: (name: string) => void) {}

  /** True while a frame is playing or audio is waiting. */
  get playing(): boolean {
    return this.inFlightBytes > 0 || this.writePos > this.readPos;
  }

  /** Queued plus playing: what a clear now would drop. */
  get unplayedBytes(): number {
    return this.queuedBytes + this.inFlightBytes;
  }

  get queuedBytes(): number {
    return this.writePos - this.readPos;
  }

  /** Bytes ever queued, so a caller can tell how much one enqueue added. */
  get enqueuedTotalBytes(): number {
    return this.enqueuedTotal;
  }

  get pendingMarks(): number {
    return this.markNames.length - this.markHead;
  }

  /** Queues a base64 mu-law payload, decoding straight into the buffer. */
  enqueueBase64(payload: string): EnqueueResult {
    // Base64 never decodes to more than 3 bytes per 4 characters.
    const maxBytes = Math.ceil(payload.length / 4) * 3;
    if (this.queuedBytes + maxBytes > MAX_BUFFERED_BYTES) return 'overflow';
    this.reserve(maxBytes);
    const written = this.buffer.write(payload, this.writePos, 'base64');
    this.writePos += written;
    this.enqueuedTotal += written;
    // Node skips characters outside the alphabet; fewer bytes than the length implies means junk.
    const padding = payload.endsWith('==') ? 2 : payload.endsWith('=') ? 1 : 0;
    return written === Math.floor((payload.length * 3) / 4) - padding ? 'ok' : 'invalid-base64';
  }

  /** A mark from the bot; echoed at once when nothing before it is still to play. */
  mark(name: string): void {
    if (this.enqueuedTotal <= this.finishedTotal) {
      this.onMarkPlayed(name);
      return;
    }
    this.markNames.push(name);
    this.markPositions.push(this.enqueuedTotal);
  }

  /** Drops all queued and playing audio and echoes every pending mark; returns bytes dropped. */
  clear(): number {
    const dropped = this.unplayedBytes;
    this.readPos = 0;
    this.writePos = 0;
    this.inFlightBytes = 0;
    this.finishedTotal = this.enqueuedTotal;
    for (let i = this.markHead; i < this.markNames.length; i++) this.onMarkPlayed(this.markNames[i]!);
    this.resetMarks();
    return dropped;
  }

  /**
   * Advances one 20 ms frame. Copies the bytes that start playing now into `frameOut` (at least
   * 160 long) and returns how many (0 when idle; less than 160 when the bot sent a short chunk).
   */
  tick(frameOut: Uint8Array): number {
    if (this.inFlightBytes > 0) {
      this.finishedTotal += this.inFlightBytes;
      this.inFlightBytes = 0;
      this.releaseMarks();
    }
    const bytes = Math.min(MULAW_FRAME_BYTES, this.queuedBytes);
    if (bytes > 0) {
      frameOut.set(this.buffer.subarray(this.readPos, this.readPos + bytes));
      this.readPos += bytes;
      this.inFlightBytes = bytes;
      if (this.readPos === this.writePos) {
        this.readPos = 0;
        this.writePos = 0;
      }
    }
    return bytes;
  }

  private releaseMarks(): void {
    while (this.markHead < this.markNames.length && this.markPositions[this.markHead]! <= this.finishedTotal) {
      const name = this.markNames[this.markHead]!;
      this.markHead += 1;
      this.onMarkPlayed(name);
    }
    if (this.markHead === this.markNames.length) this.resetMarks();
  }

  private resetMarks(): void {
    this.markNames.length = 0;
    this.markPositions.length = 0;
    this.markHead = 0;
  }

  /** Makes room for `bytes` after writePos: compact first, grow only when really full. */
  private reserve(bytes: number): void {
    if (this.writePos + bytes <= this.buffer.length) return;
    const queued = this.queuedBytes;
    if (queued + bytes <= this.buffer.length) {
      this.buffer.copy(this.buffer, 0, this.readPos, this.writePos);
    } else {
      let capacity = this.buffer.length * 2;
      while (capacity < queued + bytes) capacity *= 2;
      const grown = Buffer.allocUnsafe(capacity);
      this.buffer.copy(grown, 0, this.readPos, this.writePos);
      this.buffer = grown;
    }
    this.readPos = 0;
    this.writePos = queued;
  }
}
