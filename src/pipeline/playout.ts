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
  /**
   * How far ahead of the carrier's playback we may send. Small keeps barge-in crisp where the far
   * end cannot drop what it holds (see PlayoutPacing).
   */
  leadMs?: number;
  /** A mark every N frames tells us what was heard to within N*20 ms. */
  markEveryFrames?: number;
  /**
   * Frames the lead must have room for before more are sent (a run's first frames go at once).
   * With N, a talking call writes to the carrier every N·20 ms, N frames at a time, which the
   * transport sends in one system call (twilio-transport.ts); the lead left at the carrier swings
   * between leadMs - N·20 and leadMs. Default 1; calls use their transport's PlayoutPacing.
   */
  framesPerWrite?: number;
  /** The call's clock (ms), which the carrier's playback is modelled on; `performance.now()` by default. */
  now?: () => number;
}

/** How far ahead of the far end's playback a call's audio goes, and how many frames a write. */
export interface PlayoutPacing {
  leadMs: number;
  framesPerWrite: number;
}

/**
 * A call's pacing where the far end may play on what it holds after a barge-in (a room, whose
 * Pipecat clients have no way to drop queued audio): a short lead, two frames a write.
 */
export const CALL_PACING: PlayoutPacing = { leadMs: 100, framesPerWrite: 2 };

/**
 * A call's pacing where the far end drops what it holds on `clear` (Twilio's media streams): the
 * lead does not reach the caller's ear after a barge-in or a pause, so writes carry five frames
 * and their mark (a run's first burst, the whole lead, is two such), every 100 ms as the
 * vendors' deltas come, and the lead swings between 100 and 200 ms. A write to the carrier is a
 * system call and a websocket frame or two: 25 a second while the bot talks with CALL_PACING, 10
 * with this (docs/cost-per-call.md).
 */
export const CLEARABLE_PACING: PlayoutPacing = { leadMs: 200, framesPerWrite: 5 };

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
  /**
   * The reply's audio in one buffer that lives as long as the call: `[keptFrom, sendFrom)` was sent
   * and is not yet proven heard (the last echoed mark is at `keptFrom`; a pause sends it again from
   * its heard point), `[sendFrom, writeEnd)` waits to be sent, its last frame possibly partial.
   * Offsets stay whole frames apart. One buffer rather than an object per frame: queued audio
   * outlives V8's young-generation collections (a voice sends faster than real time), and an object
   * per 20 ms frame was most of what a talking call kept alive, so promoted, and collected again by
   * full collections (docs/cost-per-call.md).
   */
  private audio = new Uint8Array(AUDIO_BUFFER_BYTES);
  private keptFrom = 0;
  private sendFrom = 0;
  private writeEnd = 0;

  /** Reply state. */
  private replyOpen = false;
  private replyEnded = false;
  private replySentMs = 0;
  private framesSinceMark = 0;
  private pendingMarks: PendingMark[] = [];
  private lastEchoReplyMs = 0;
  private lastEchoAtMs = 0;

  /** Reply time (ms) at `keptFrom`: the last echoed mark's. */
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
    return this.replyOpen && (this.writeEnd > this.sendFrom || this.pendingMarks.length > 0 || !this.replyEnded);
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
    this.forgetAudio();
    this.sentBaseMs = 0;
    this.pausedAtMs = undefined;
    return this.generationValue;
  }

  /** Adds mu-law audio of a reply. Any length; frames are cut here. Stale generations are dropped. */
  enqueue(generation: number, mulaw: Uint8Array): void {
    if (generation !== this.generationValue || !this.replyOpen || this.replyEnded) return;
    this.makeRoom(mulaw.length);
    this.audio.set(mulaw, this.writeEnd);
    this.writeEnd += mulaw.length;
    this.pump();
  }

  /** The reply has no more audio: pad the tail to a whole frame and mark the end. */
  endReply(generation: number): void {
    if (generation !== this.generationValue || !this.replyOpen || this.replyEnded) return;
    const partialBytes = (this.writeEnd - this.sendFrom) % FRAME_BYTES;
    if (partialBytes > 0) {
      // Mu-law silence up to a whole frame.
      this.makeRoom(FRAME_BYTES - partialBytes);
      this.audio.fill(0xff, this.writeEnd, this.writeEnd + FRAME_BYTES - partialBytes);
      this.writeEnd += FRAME_BYTES - partialBytes;
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
      // Lent to the sink for this call only (call-transport.ts): the bytes stay here until heard.
      const frame = this.audio.subarray(this.sendFrom, this.sendFrom + FRAME_BYTES);
      this.sendFrom += FRAME_BYTES;
      if (this.replySentMs === 0) this.events.onFirstFrame?.(this.generationValue, now);
      this.sink.sendMedia(frame);
      this.runSentMs += FRAME_MS;
      this.replySentMs += FRAME_MS;
      this.framesSinceMark += 1;
      if (this.framesSinceMark >= this.markEveryFrames) this.sendMark();
    }
    this.afterSending();
  }

  private afterSending(): void {
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
    const heardFrames = Math.max(0, (mark.replyMs - this.sentBaseMs) / FRAME_MS);
    this.keptFrom = Math.min(this.sendFrom, this.keptFrom + heardFrames * FRAME_BYTES);
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
    this.forgetAudio();
    this.pendingMarks = [];
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
    const sentFrames = (this.sendFrom - this.keptFrom) / FRAME_BYTES;
    const heardFrames = Math.min(sentFrames, Math.floor((heard - this.sentBaseMs) / FRAME_MS));
    const heardAtMs = this.sentBaseMs + heardFrames * FRAME_MS;
    const outstanding = this.replySentMs > this.lastEchoReplyMs;
    // Marks first: a room's transport echoes pending marks inside sendClear.
    this.pendingMarks = [];
    this.pausedAtMs = heardAtMs;
    if (outstanding) this.sink.sendClear();
    // What was sent past the heard point is sent again on resume.
    this.sendFrom = this.keptFrom + heardFrames * FRAME_BYTES;
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

  /** Whole frames waiting to be sent. */
  private queuedFrames(): number {
    return Math.floor((this.writeEnd - this.sendFrom) / FRAME_BYTES);
  }

  /** Room for `bytes` more at the end: the heard audio goes, and the buffer grows only when it must. */
  private makeRoom(bytes: number): void {
    if (this.writeEnd + bytes <= this.audio.length) return;
    const keptBytes = this.writeEnd - this.keptFrom;
    if (keptBytes + bytes <= this.audio.length) {
      this.audio.copyWithin(0, this.keptFrom, this.writeEnd);
    } else {
      const grown = new Uint8Array(Math.max(this.audio.length * 2, keptBytes + bytes));
      grown.set(this.audio.subarray(this.keptFrom, this.writeEnd));
      this.audio = grown;
    }
    this.sendFrom -= this.keptFrom;
    this.writeEnd -= this.keptFrom;
    this.keptFrom = 0;
  }

  /** No audio of a reply is kept; a buffer a long reply grew goes back to the usual size. */
  private forgetAudio(): void {
    this.keptFrom = 0;
    this.sendFrom = 0;
    this.writeEnd = 0;
    if (this.audio.length > MAX_KEPT_AUDIO_BUFFER_BYTES) this.audio = new Uint8Array(AUDIO_BUFFER_BYTES);
  }
}

/** A call's audio buffer: 2 s of 8 kHz mu-law, enough for the lead and what a voice sends ahead. */
const AUDIO_BUFFER_BYTES = 16_000;
/** A buffer grown past this (a reply sent far ahead of real time) is not kept for the next reply. */
const MAX_KEPT_AUDIO_BUFFER_BYTES = 4 * AUDIO_BUFFER_BYTES;

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
