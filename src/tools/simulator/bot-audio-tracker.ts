import { FRAME_MS, MULAW_FRAME_BYTES } from '../../audio/frames.js';
import { BotPlayout, type EnqueueResult } from './bot-playout.js';
import type { ClearRecord, SegmentRecord, TimelineKind } from './call-report.js';

export interface BotAudioTrackerOptions {
  /** Idle longer than this ends a segment (a reply); shorter idle mid-segment is an underrun. */
  segmentGapMs: number;
  /** Bot audio arriving this soon after a clear counts as late. */
  clearWindowMs: number;
  /** The carrier echoes this mark now. */
  onMarkPlayed: (name: string) => void;
  onEvent: (atMs: number, kind: TimelineKind, detail?: string) => void;
}

const MULAW_BYTES_PER_MS = 8;

/**
 * The bot's side of the call as the caller experiences it: the emulated playout plus what we
 * learn from it (segments of bot speech, underruns, clears and the audio that came after them).
 * The caller's script reads its state to decide when to speak.
 */
export class BotAudioTracker {
  readonly segments: SegmentRecord[] = [];
  readonly clears: ClearRecord[] = [];
  firstAudioMs: number | null = null;
  /** Idle-to-playing transitions, and when the last one happened (arrival of the audio). */
  activations = 0;
  lastActivationMs = 0;
  /** Since when nothing has been playing; null while playing or before any bot audio. */
  idleSinceMs: number | null = null;
  receivedBytes = 0;
  playedBytes = 0;
  shortFrames = 0;
  underruns = 0;
  underrunTotalMs = 0;
  longestUnderrunMs = 0;

  private readonly playout: BotPlayout;
  private openSegment: SegmentRecord | null = null;
  private idleTicks = 0;
  private lastClear: ClearRecord | null = null;
  /** `playedBytes` when the segment in progress began. */
  private segmentStartPlayedBytes = 0;

  constructor(private readonly options: BotAudioTrackerOptions) {
    this.playout = new BotPlayout(options.onMarkPlayed);
  }

  get playing(): boolean {
    return this.playout.playing;
  }

  /** Start of the bot speech segment in progress (including a short underrun), or null. */
  get segmentStartMs(): number | null {
    return this.openSegment?.startMs ?? null;
  }

  media(payloadBase64: string, nowMs: number): EnqueueResult {
    const wasPlaying = this.playout.playing;
    const before = this.playout.enqueuedTotalBytes;
    const result = this.playout.enqueueBase64(payloadBase64);
    const bytes = this.playout.enqueuedTotalBytes - before;
    if (bytes === 0) return result;
    this.receivedBytes += bytes;
    this.firstAudioMs ??= nowMs;
    if (!wasPlaying) {
      this.activations += 1;
      this.lastActivationMs = nowMs;
      this.idleSinceMs = null;
      if (!this.openSegment) {
        this.openSegment = { startMs: nowMs, endMs: null };
        this.segmentStartPlayedBytes = this.playedBytes;
        this.segments.push(this.openSegment);
        const clear = this.lastClear;
        const resumed =
          clear !== null && clear.resumedAfterMs === null && nowMs - clear.atMs <= this.options.clearWindowMs;
        if (resumed) clear.resumedAfterMs = nowMs - clear.atMs;
        this.options.onEvent(
          nowMs,
          'bot-audio-start',
          resumed ? `resumed ${Math.round(nowMs - clear.atMs)} ms after the clear` : undefined,
        );
      }
    }
    const clear = this.lastClear;
    if (clear && nowMs - clear.atMs <= this.options.clearWindowMs) {
      clear.lateBytes += bytes;
      clear.lastLateAfterMs = nowMs - clear.atMs;
    }
    return result;
  }

  mark(name: string): void {
    this.playout.mark(name);
  }

  clear(nowMs: number): void {
    const droppedBytes = this.playout.unplayedBytes;
    this.options.onEvent(
      nowMs,
      'clear-received',
      droppedBytes > 0 ? `dropped ${Math.round(droppedBytes / MULAW_BYTES_PER_MS)} ms` : 'nothing queued',
    );
    // Echoes every pending mark, through onMarkPlayed, before returning.
    this.playout.clear();
    const record: ClearRecord = {
      atMs: nowMs,
      playedBytes: this.openSegment ? this.playedBytes - this.segmentStartPlayedBytes : 0,
      droppedBytes,
      lateBytes: 0,
      lastLateAfterMs: null,
      resumedAfterMs: null,
    };
    this.clears.push(record);
    this.lastClear = record;
    if (this.openSegment) this.closeSegment(nowMs);
    this.idleSinceMs = nowMs;
  }

  /** One 20 ms clock tick; returns the bytes that started playing, copied into `frameOut`. */
  tick(nowMs: number, frameOut: Uint8Array): number {
    const bytes = this.playout.tick(frameOut);
    if (bytes > 0) {
      this.playedBytes += bytes;
      if (bytes < MULAW_FRAME_BYTES) this.shortFrames += 1;
      if (this.idleTicks > 0) {
        const gapMs = this.idleTicks * FRAME_MS;
        this.underruns += 1;
        this.underrunTotalMs += gapMs;
        if (gapMs > this.longestUnderrunMs) this.longestUnderrunMs = gapMs;
        this.idleTicks = 0;
      }
    } else if (this.openSegment) {
      this.idleSinceMs ??= nowMs;
      this.idleTicks += 1;
      if (nowMs - this.idleSinceMs >= this.options.segmentGapMs) this.closeSegment(this.idleSinceMs);
    }
    return bytes;
  }

  /** End of call: closes the segment in progress. */
  finish(nowMs: number): void {
    if (this.openSegment) this.closeSegment(this.playout.playing ? nowMs : (this.idleSinceMs ?? nowMs));
  }

  private closeSegment(endMs: number): void {
    const segment = this.openSegment!;
    segment.endMs = endMs;
    this.openSegment = null;
    this.idleTicks = 0;
    this.options.onEvent(endMs, 'bot-audio-end', `${Math.round(endMs - segment.startMs)} ms`);
  }
}
