import { randomInt } from 'node:crypto';
import { FRAME_MS, SAMPLES_PER_FRAME_8K } from '../../audio/frames.js';
import { OPUS_TICKS_PER_FRAME, OpusEncoder8k } from '../../audio/opus.js';

/** Frames of silence sent after a cut: enough for the browser's decoder to settle on silence. */
const SILENCE_FRAMES_AFTER_CLEAR = 3;
const SILENCE = new Int16Array(SAMPLES_PER_FRAME_8K);

/** One encoded frame, ready for the RTP sender (which stamps its SSRC and payload type). */
export interface OpusRtpFrame {
  sequenceNumber: number;
  timestamp: number;
  /** First packet of a talkspurt (after the bot was silent or cut off). */
  marker: boolean;
  payload: Buffer;
}

/**
 * The bot's voice to one browser: 20 ms frames encoded to Opus, each sent when the RTP clock says
 * it is due, never ahead of it. The room hands frames over in real time already, so a frame is
 * usually sent the moment it arrives; one that comes early waits, and frames never pile up in the
 * browser's jitter buffer, which is what lets a barge-in stop the bot there within a frame. What
 * waits here is dropped on `clear`. After a pause, the RTP timestamp moves on by the time that
 * passed (the browser plays the next talkspurt at once rather than stretching the gap).
 */
export class OpusSender {
  readonly stats = { framesSent: 0, framesDropped: 0, bytesSent: 0 };
  private readonly encoder = new OpusEncoder8k();
  private queue: Int16Array[] = [];
  private sequenceNumber = randomInt(0, 0x10000);
  private timestamp = randomInt(0, 0x100000000);
  /** When the next frame is due on our clock; undefined while idle. */
  private nextDueMs: number | undefined;
  /** When the audio sent so far ends, ms: where the RTP clock stands. */
  private sentUntilMs: number | undefined;
  private timer: NodeJS.Timeout | undefined;
  private talkspurtStart = true;
  private closed = false;

  constructor(
    private readonly send: (frame: OpusRtpFrame) => void,
    private readonly now: () => number = () => performance.now(),
    /** Frames (of 20 ms) held at most; beyond, the oldest are dropped: the room sends in real time, so only a stall fills it. */
    private readonly maxQueuedFrames = 50,
  ) {}

  /** Bytes of audio held but not yet sent, as ms. */
  get queuedMs(): number {
    return this.queue.length * FRAME_MS;
  }

  /** One 20 ms frame of 8 kHz PCM (copied: the caller may reuse it). */
  push(pcm8k: Int16Array): void {
    if (this.closed || pcm8k.length !== SAMPLES_PER_FRAME_8K) return;
    this.queue.push(Int16Array.from(pcm8k));
    if (this.queue.length > this.maxQueuedFrames) {
      this.queue.shift();
      this.stats.framesDropped += 1;
    }
    // Nothing was waiting and the last frame's time is over: the bot paused, a talkspurt begins.
    if (this.timer === undefined && (this.nextDueMs === undefined || this.nextDueMs < this.now() - FRAME_MS))
      this.startTalkspurt();
    if (this.timer === undefined) this.pump();
  }

  /**
   * Drops what has not been sent (a barge-in). A few frames of silence follow what was sent: a
   * stream that just stops makes the browser conceal the "loss" by stretching the last sound and
   * fading it out over 100-200 ms, while silence ends it at once.
   */
  clear(): void {
    this.stats.framesDropped += this.queue.length;
    this.queue = [];
    this.stopTimer();
    if (this.closed || this.sentUntilMs === undefined || this.sentUntilMs < this.now() - FRAME_MS) return;
    for (let i = 0; i < SILENCE_FRAMES_AFTER_CLEAR; i++) this.queue.push(SILENCE);
    this.pump();
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.clear();
    this.encoder.free();
  }

  private startTalkspurt(): void {
    const nowMs = this.now();
    if (this.sentUntilMs !== undefined && nowMs > this.sentUntilMs) {
      // The RTP clock runs on while nothing is sent: skip the silent frames' ticks.
      const silentFrames = Math.floor((nowMs - this.sentUntilMs) / FRAME_MS);
      this.timestamp = (this.timestamp + silentFrames * OPUS_TICKS_PER_FRAME) >>> 0;
    }
    this.nextDueMs = Math.max(nowMs, this.sentUntilMs ?? nowMs);
    this.talkspurtStart = true;
  }

  private pump(): void {
    this.timer = undefined;
    if (this.closed) return;
    const nowMs = this.now();
    // Timers fire a little late; a frame due within a millisecond goes now.
    while (this.queue.length > 0 && this.nextDueMs! <= nowMs + 1) {
      this.sendOne(this.queue.shift()!);
      this.nextDueMs! += FRAME_MS;
    }
    if (this.queue.length === 0) return;
    this.timer = setTimeout(() => this.pump(), Math.max(0, this.nextDueMs! - nowMs));
  }

  private sendOne(pcm8k: Int16Array): void {
    const payload = this.encoder.encode(pcm8k);
    this.send({
      sequenceNumber: this.sequenceNumber,
      timestamp: this.timestamp,
      marker: this.talkspurtStart,
      payload,
    });
    this.talkspurtStart = false;
    this.sequenceNumber = (this.sequenceNumber + 1) & 0xffff;
    this.timestamp = (this.timestamp + OPUS_TICKS_PER_FRAME) >>> 0;
    this.sentUntilMs = this.nextDueMs! + FRAME_MS;
    this.stats.framesSent += 1;
    this.stats.bytesSent += payload.byteLength;
  }

  private stopTimer(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
  }
}
