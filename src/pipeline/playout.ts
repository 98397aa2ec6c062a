/**
 * Playout is the only writer of outbound audio on a call. It sends whole 20 ms frames, keeps a
 * bounded lead ahead of what the carrier has played, drops marks' bookkeeping into "what was
 * really heard", and bumps a generation on clear so nothing of a cancelled reply goes out late.
 */

import { FRAME_MS, MULAW_FRAME_BYTES as FRAME_BYTES } from '../audio/frames.js';
import { type Clock, type ClockTimer, REAL_CLOCK } from '../shared/clock.js';

export { FRAME_BYTES, FRAME_MS };

/** Where frames, marks and clears go: the carrier transport. */
export interface PlayoutSink {
  sendMedia(frame: Uint8Array): void;
  sendMark(name: string): void;
  sendClear(): void;
}

export interface PlayoutOptions {
  /** How far ahead of the carrier's playback we may send. Small keeps barge-in crisp. */
  leadMs?: number;
  /** A mark every N frames tells us what was heard to within N*20 ms. */
  markEveryFrames?: number;
  /**
   * Frames the lead must have room for before more are sent (a run's first frames go at once).
   * With 2, a talking call writes to the carrier every 40 ms instead of every 20 ms, two frames at
   * a time, which the transport sends in one system call (twilio-transport.ts); the lead left at
   * the carrier swings between leadMs - 40 and leadMs instead of leadMs - 20 and leadMs. Default 1.
   */
  framesPerWrite?: number;
  /** The call's clock (ms), which the carrier's playback is modelled on; `performance.now()` by default. */
  now?: () => number;
}

/** What calls use (call-session.ts, s2s-call-session.ts): see PlayoutOptions.framesPerWrite. */
export const CALL_FRAMES_PER_WRITE = 2;

export interface PlayoutEvents {
  /** First frame of a reply went out (for latency metrics). */
  onFirstFrame?(generation: number, atMs: number): void;
  /** The carrier has played everything of this reply (its last mark came back). */
  onReplyPlayed?(generation: number): void;
  /** The send loop ran dry mid-reply while the reply was still producing audio. */
  onUnderrun?(generation: number): void;
}

export interface ClearResult {
  generation: number;
  /** Milliseconds of the reply the caller heard, from echoed marks and elapsed time. */
  heardMs: number;
  /** Milliseconds of the reply we had sent. */
  sentMs: number;
  /** Whether a `clear` was sent (false when nothing was outstanding). */
  cleared: boolean;
}

interface PendingMark {
  name: string;
  /** Reply time (ms of this reply's audio) at the mark. */
  replyMs: number;
}

export class Playout {
  private readonly leadMs: number;
  private readonly markEveryFrames: number;
  private readonly framesPerWrite: number;
  private readonly now: () => number;

  private generationValue = 0;
  private markSeq = 0;
  /** Whole frames waiting to be sent, and the partial tail of the last chunk. */
  private queue: Uint8Array[] = [];
  private queueHead = 0;
  private partial = new Uint8Array(FRAME_BYTES);
  private partialBytes = 0;

  /** Reply state. */
  private replyOpen = false;
  private replyEnded = false;
  private replySentMs = 0;
  private framesSinceMark = 0;
  private pendingMarks: PendingMark[] = [];
  private lastEchoReplyMs = 0;
  private lastEchoAtMs = 0;

  /**
   * Frames sent and not yet proven heard (from the last echoed mark on, at reply time
   * `sentBaseMs`): what a pause puts back in the queue to send again on resume.
   */
  private sentFrames: Uint8Array[] = [];
  private sentBaseMs = 0;
  /** Paused (speech suspected over the bot): the carrier was cleared, nothing is sent; the heard point. */
  private pausedAtMs: number | undefined;

  /** Carrier-time model of the current continuous run of audio. */
  private runStartAtMs = 0;
  private runSentMs = 0;
  private replyMsBeforeRun = 0;

  constructor(
    private readonly sink: PlayoutSink,
    private readonly events: PlayoutEvents = {},
    options: PlayoutOptions = {},
  ) {
    this.leadMs = options.leadMs ?? 100;
    this.markEveryFrames = Math.max(1, options.markEveryFrames ?? 5);
    this.framesPerWrite = Math.max(1, Math.floor(options.framesPerWrite ?? 1));
    this.now = options.now ?? (() => performance.now());
  }

  get generation(): number {
    return this.generationValue;
  }

  /** True while audio of the current reply is queued or not yet confirmed played. */
  get active(): boolean {
    return (
      this.replyOpen &&
      (this.queuedFrames() > 0 || this.partialBytes > 0 || this.pendingMarks.length > 0 || !this.replyEnded)
    );
  }

  /** True while the caller may be hearing bot audio (sent and not yet confirmed played, or queued). */
  get audible(): boolean {
    return this.queuedFrames() > 0 || this.pendingMarks.length > 0;
  }

  get paused(): boolean {
    return this.pausedAtMs !== undefined;
  }

  /** Starts a new reply and returns its generation; audio tagged with an older one is dropped. */
  startReply(): number {
    if (this.replyOpen) this.clear();
    this.generationValue += 1;
    this.replyOpen = true;
    this.replyEnded = false;
    this.replySentMs = 0;
    this.framesSinceMark = 0;
    this.pendingMarks = [];
    this.lastEchoReplyMs = 0;
    this.lastEchoAtMs = 0;
    this.replyMsBeforeRun = 0;
    this.runSentMs = 0;
    this.sentFrames = [];
    this.sentBaseMs = 0;
    this.pausedAtMs = undefined;
    return this.generationValue;
  }

  /** Adds mu-law audio of a reply. Any length; frames are cut here. Stale generations are dropped. */
  enqueue(generation: number, mulaw: Uint8Array): void {
    if (generation !== this.generationValue || !this.replyOpen || this.replyEnded) return;
    let offset = 0;
    if (this.partialBytes > 0) {
      const take = Math.min(FRAME_BYTES - this.partialBytes, mulaw.length);
      this.partial.set(mulaw.subarray(0, take), this.partialBytes);
      this.partialBytes += take;
      offset = take;
      if (this.partialBytes === FRAME_BYTES) {
        this.queue.push(this.partial);
        this.partial = new Uint8Array(FRAME_BYTES);
        this.partialBytes = 0;
      }
    }
    const wholeEnd = offset + Math.floor((mulaw.length - offset) / FRAME_BYTES) * FRAME_BYTES;
    if (wholeEnd > offset) {
      // One copy per chunk, then frames are views into it: the producer may reuse its buffer.
      const copy = mulaw.slice(offset, wholeEnd);
      for (let at = 0; at < copy.length; at += FRAME_BYTES) this.queue.push(copy.subarray(at, at + FRAME_BYTES));
    }
    if (wholeEnd < mulaw.length) {
      this.partial.set(mulaw.subarray(wholeEnd), 0);
      this.partialBytes = mulaw.length - wholeEnd;
    }
    this.pump();
  }

  /** The reply has no more audio: pad the tail to a whole frame and mark the end. */
  endReply(generation: number): void {
    if (generation !== this.generationValue || !this.replyOpen || this.replyEnded) return;
    if (this.partialBytes > 0) {
      this.partial.fill(0xff, this.partialBytes);
      this.queue.push(this.partial);
      this.partial = new Uint8Array(FRAME_BYTES);
      this.partialBytes = 0;
    }
    this.replyEnded = true;
    this.pump();
  }

  /** Sends what the lead allows. Called on enqueue and by the shared clock. */
  pump(): void {
    if (!this.replyOpen || this.pausedAtMs !== undefined) return;
    const now = this.now();
    let carrierPlayedMs = now - this.runStartAtMs;
    if (this.queuedFrames() > 0 && this.runSentMs <= carrierPlayedMs) {
      // The carrier has drained everything: a new run starts now.
      if (this.replySentMs > 0 && !this.replyEnded) this.events.onUnderrun?.(this.generationValue);
      this.replyMsBeforeRun = this.replySentMs;
      this.runStartAtMs = now;
      this.runSentMs = 0;
      carrierPlayedMs = 0;
    }
    // Mid-run, wait until the lead has room for a whole write; a new run starts at once.
    if (this.runSentMs > 0 && this.leadMs - (this.runSentMs - carrierPlayedMs) < this.framesPerWrite * FRAME_MS) {
      this.afterSending();
      return;
    }
    while (this.queuedFrames() > 0 && this.runSentMs - carrierPlayedMs < this.leadMs) {
      const frame = this.queue[this.queueHead]!;
      this.queue[this.queueHead] = EMPTY;
      this.queueHead += 1;
      if (this.replySentMs === 0) this.events.onFirstFrame?.(this.generationValue, now);
      this.sentFrames.push(frame);
      this.sink.sendMedia(frame);
      this.runSentMs += FRAME_MS;
      this.replySentMs += FRAME_MS;
      this.framesSinceMark += 1;
      if (this.framesSinceMark >= this.markEveryFrames) this.sendMark();
    }
    this.afterSending();
  }

  private afterSending(): void {
    if (this.queueHead > 256 && this.queueHead * 2 > this.queue.length) {
      this.queue = this.queue.slice(this.queueHead);
      this.queueHead = 0;
    }
    if (this.replyEnded && this.queuedFrames() === 0 && this.framesSinceMark > 0) this.sendMark();
    if (this.replyEnded && this.queuedFrames() === 0 && this.pendingMarks.length === 0) this.finishReply();
  }

  /** A mark came back from the carrier: everything before it has been played. */
  onMarkEchoed(name: string): void {
    const index = this.pendingMarks.findIndex((mark) => mark.name === name);
    if (index < 0) return; // a mark of a cleared reply, echoed by the carrier's clear
    const mark = this.pendingMarks[index]!;
    this.pendingMarks.splice(0, index + 1);
    this.lastEchoReplyMs = mark.replyMs;
    this.lastEchoAtMs = this.now();
    // Heard for sure: no pause can need these frames again.
    this.sentFrames.splice(0, (mark.replyMs - this.sentBaseMs) / FRAME_MS);
    this.sentBaseMs = mark.replyMs;
    if (this.pausedAtMs !== undefined) return;
    if (this.replyEnded && this.queuedFrames() === 0 && this.pendingMarks.length === 0) this.finishReply();
  }

  /** Milliseconds of the current reply the caller has heard by now. */
  heardMs(): number {
    if (!this.replyOpen) return 0;
    if (this.pausedAtMs !== undefined) return this.pausedAtMs;
    const now = this.now();
    const estimate = this.replyMsBeforeRun + Math.min(this.runSentMs, Math.max(0, now - this.runStartAtMs));
    const sinceEcho = this.lastEchoAtMs > 0 ? this.lastEchoReplyMs + (now - this.lastEchoAtMs) : estimate;
    // The carrier starts playing a little after we send, so elapsed time overshoots; a mark that has
    // not come back proves its audio has not finished, which caps the estimate.
    const upper = this.pendingMarks[0]?.replyMs ?? this.replySentMs;
    return Math.round(Math.max(this.lastEchoReplyMs, Math.min(estimate, sinceEcho, upper)));
  }

  /** Barge-in or hang-up: drop the reply. Sends `clear` when the carrier may hold audio of it. */
  clear(): ClearResult {
    const generation = this.generationValue;
    const heardMs = this.heardMs();
    const sentMs = this.replySentMs;
    // Only audio we sent and the carrier has not confirmed playing can still be heard (a paused
    // reply's carrier was cleared already).
    const cleared = this.replyOpen && this.pausedAtMs === undefined && this.replySentMs > this.lastEchoReplyMs;
    if (cleared) this.sink.sendClear();
    this.queue = [];
    this.queueHead = 0;
    this.partialBytes = 0;
    this.pendingMarks = [];
    this.sentFrames = [];
    this.pausedAtMs = undefined;
    this.replyOpen = false;
    this.replyEnded = false;
    this.generationValue += 1;
    return { generation, heardMs, sentMs, cleared };
  }

  /**
   * The caller may be speaking over the bot: silence the reply at once without dropping it. The
   * carrier is cleared, and the audio from the heard point on (to a whole frame) goes back to the
   * front of the queue, with whatever the voice adds meanwhile queued behind it; nothing is sent
   * until resume(). Returns the heard point (ms of the reply), or undefined when nothing was
   * playing (no reply, or already paused).
   */
  pause(): number | undefined {
    if (!this.replyOpen || this.pausedAtMs !== undefined) return undefined;
    const heard = Math.max(this.sentBaseMs, this.heardMs());
    const heardFrames = Math.min(this.sentFrames.length, Math.floor((heard - this.sentBaseMs) / FRAME_MS));
    const heardAtMs = this.sentBaseMs + heardFrames * FRAME_MS;
    const unheard = this.sentFrames.splice(heardFrames);
    const outstanding = this.replySentMs > this.lastEchoReplyMs;
    // Marks first: a room's transport echoes pending marks inside sendClear.
    this.pendingMarks = [];
    this.pausedAtMs = heardAtMs;
    if (outstanding) this.sink.sendClear();
    this.queue = [...unheard, ...this.queue.slice(this.queueHead)];
    this.queueHead = 0;
    this.replySentMs = heardAtMs;
    this.replyMsBeforeRun = heardAtMs;
    this.runSentMs = 0;
    this.framesSinceMark = 0;
    return heardAtMs;
  }

  /** It was not the caller speaking: play on from the heard point. */
  resume(): void {
    if (this.pausedAtMs === undefined) return;
    this.pausedAtMs = undefined;
    // A new run starts now: the carrier holds nothing of this reply after the clear.
    this.runStartAtMs = this.now();
    this.runSentMs = 0;
    this.pump();
  }

  /**
   * A mark that is not about audio: it tells the carrier's side that something happened at this
   * point of the call (a function call, `tool:<name>:<phase>`), which the phone simulator shows on
   * its timeline. Its echo matches no pending mark and is ignored; it moves no bookkeeping.
   */
  sendSignal(name: string): void {
    this.sink.sendMark(name);
  }

  private sendMark(): void {
    this.markSeq += 1;
    const name = `${this.generationValue}:${this.markSeq}`;
    this.pendingMarks.push({ name, replyMs: this.replySentMs });
    this.framesSinceMark = 0;
    this.sink.sendMark(name);
  }

  private finishReply(): void {
    const generation = this.generationValue;
    this.replyOpen = false;
    this.events.onReplyPlayed?.(generation);
  }

  private queuedFrames(): number {
    return this.queue.length - this.queueHead;
  }
}

const EMPTY = new Uint8Array(0);

/**
 * One timer for every call's Playout in the process, instead of one per call: 300 calls should
 * not mean 300 intervals competing for the event loop. It ticks on the calls' clock, which their
 * Playouts' `now` must read too.
 */
export class PlayoutClock {
  private readonly playouts = new Set<Playout>();
  private timer: ClockTimer | undefined;
  private lastTickAtMs = 0;
  /** Told how late each tick woke up (ms of the calls' clock), for /metrics: frames go out at most that late. */
  onTickLag: ((lagMs: number) => void) | undefined;

  constructor(
    readonly clock: Clock = REAL_CLOCK,
    private readonly tickMs = 10,
  ) {}

  add(playout: Playout): void {
    this.playouts.add(playout);
    if (!this.timer) {
      this.lastTickAtMs = this.clock.now();
      this.timer = this.clock.setInterval(() => {
        const nowMs = this.clock.now();
        this.onTickLag?.(Math.max(0, nowMs - this.lastTickAtMs - this.tickMs));
        this.lastTickAtMs = nowMs;
        for (const p of this.playouts) p.pump();
      }, this.tickMs);
      this.timer.unref();
    }
  }

  delete(playout: Playout): void {
    this.playouts.delete(playout);
    if (this.playouts.size === 0 && this.timer) {
      this.clock.clearInterval(this.timer);
      this.timer = undefined;
    }
  }
}
