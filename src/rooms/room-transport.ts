import { FRAME_MS, SAMPLES_PER_FRAME_8K } from '../audio/frames.js';
import { type Clock, type ClockTimer, REAL_CLOCK } from '../shared/clock.js';
import { decodeMulaw, encodeMulaw } from '../audio/mulaw.js';
import type { CallTransport, CallTransportHandler } from '../pipeline/call-transport.js';

/** A room member as the bot's transport sees it: it hears the bot and may be told to stop. */
export interface RoomListener {
  /** One 20 ms frame of the bot's audio, 8 kHz PCM. Shared between listeners: do not keep it. */
  playBotAudio(pcm8k: Int16Array): void;
  /** The bot was cut off: drop whatever of its audio is still buffered. */
  clearBotAudio(): void;
}

/** Where a member's speech goes: 8 kHz PCM in any chunk size, in real time. */
export interface RoomInput {
  push(pcm8k: Int16Array): void;
  /** Samples waiting to be mixed. */
  readonly bufferedSamples: number;
}

/** A member may run this far ahead of the mixer before its oldest audio is dropped (1 s). */
const MAX_BUFFERED_SAMPLES = 8000;
/** After a stall of the event loop, mix at most this many overdue frames at once. */
const MAX_CATCH_UP_FRAMES = 10;
const TICK_MS = 10;

class MemberInput implements RoomInput {
  private samples = new Int16Array(MAX_BUFFERED_SAMPLES);
  private length = 0;

  constructor(readonly listener: RoomListener) {}

  get bufferedSamples(): number {
    return this.length;
  }

  push(pcm8k: Int16Array): void {
    let input = pcm8k;
    if (input.length >= MAX_BUFFERED_SAMPLES) input = input.subarray(input.length - MAX_BUFFERED_SAMPLES);
    const overflow = this.length + input.length - MAX_BUFFERED_SAMPLES;
    if (overflow > 0) {
      // Keep the newest audio: a late frame is worth less than a current one.
      this.samples.copyWithin(0, overflow, this.length);
      this.length -= overflow;
    }
    this.samples.set(input, this.length);
    this.length += input.length;
  }

  /** Adds one frame of this member's audio into `mix`; a member with less than a frame adds nothing. */
  mixInto(mix: Int32Array): void {
    if (this.length < SAMPLES_PER_FRAME_8K) return;
    for (let i = 0; i < SAMPLES_PER_FRAME_8K; i++) mix[i]! += this.samples[i]!;
    this.samples.copyWithin(0, SAMPLES_PER_FRAME_8K, this.length);
    this.length -= SAMPLES_PER_FRAME_8K;
  }
}

/**
 * The bot's leg in a room. Inbound, it mixes every member's speech into one 20 ms mu-law frame
 * per 20 ms of wall time (the pipeline hears the room as one caller). Outbound, it fans each bot
 * frame out to every member, and plays the carrier's part for Playout: it echoes each mark once
 * the audio sent before it has had time to play, and on clear echoes all pending marks at once
 * and tells the members to drop their buffered bot audio.
 */
export class RoomTransport implements CallTransport {
  readonly callSid = undefined;
  readonly stats = { framesMixed: 0, mediaOut: 0, marksOut: 0, clearsOut: 0 };

  private handler: CallTransportHandler | undefined;
  private readonly members = new Set<MemberInput>();
  private readonly mix = new Int32Array(SAMPLES_PER_FRAME_8K);
  private readonly mixPcm = new Int16Array(SAMPLES_PER_FRAME_8K);
  private readonly mixMulaw = new Uint8Array(SAMPLES_PER_FRAME_8K);
  private readonly botPcm = new Int16Array(SAMPLES_PER_FRAME_8K);
  private timer: ClockTimer | undefined;
  private mixStartMs = 0;
  private framesDue = 0;
  /** When the bot audio sent so far will have finished playing, on our clock. */
  private botPlayedUntilMs = 0;
  private pendingMarks: Array<{ name: string; atMs: number }> = [];
  private closed = false;

  constructor(
    /** The session ended the call (goodbye, fatal error): the room closes with this reason. */
    private readonly onClose: (code: number, reason: string) => void,
    private readonly now: () => number = () => performance.now(),
    /** Ticks the mix: the room's clock, which `now` reads (shared/clock.ts). */
    private readonly clock: Pick<Clock, 'setInterval' | 'clearInterval'> = REAL_CLOCK,
  ) {}

  /** Starts mixing into `handler` (the bot's session). */
  attach(handler: CallTransportHandler): void {
    this.handler = handler;
    this.mixStartMs = this.now();
    this.framesDue = 0;
    this.timer = this.clock.setInterval(() => this.tick(), TICK_MS);
    this.timer.unref();
  }

  addMember(listener: RoomListener): RoomInput {
    const input = new MemberInput(listener);
    this.members.add(input);
    return input;
  }

  removeMember(input: RoomInput): void {
    this.members.delete(input as MemberInput);
  }

  get memberCount(): number {
    return this.members.size;
  }

  sendMedia(frame: Uint8Array): void {
    if (this.closed) return;
    this.stats.mediaOut += 1;
    const pcm = decodeMulaw(frame, this.botPcm);
    for (const member of this.members) member.listener.playBotAudio(pcm);
    this.botPlayedUntilMs = Math.max(this.botPlayedUntilMs, this.now()) + FRAME_MS;
  }

  sendMark(name: string): void {
    if (this.closed) return;
    this.stats.marksOut += 1;
    this.pendingMarks.push({ name, atMs: Math.max(this.botPlayedUntilMs, this.now()) });
  }

  sendClear(): void {
    if (this.closed) return;
    this.stats.clearsOut += 1;
    this.botPlayedUntilMs = this.now();
    for (const member of this.members) member.listener.clearBotAudio();
    const marks = this.pendingMarks;
    this.pendingMarks = [];
    for (const mark of marks) this.handler?.onMark(mark.name);
  }

  /** The session ends the call: the room decides what that means for everyone in it. */
  close(code = 1000, reason = 'call ended'): void {
    if (this.closed) return;
    this.onClose(code, reason);
  }

  /** The room is closing: stop the clock and tell the session (once). */
  end(reason: string): void {
    if (this.closed) return;
    this.closed = true;
    this.clock.clearInterval(this.timer);
    this.timer = undefined;
    this.members.clear();
    this.handler?.onEnd(reason);
  }

  /** Mixes the frames wall time says are due, and echoes the marks whose audio has played. */
  private tick(): void {
    const handler = this.handler;
    if (!handler || this.closed) return;
    const nowMs = this.now();
    let due = Math.floor((nowMs - this.mixStartMs) / FRAME_MS) - this.framesDue;
    if (due > MAX_CATCH_UP_FRAMES) {
      this.framesDue += due - MAX_CATCH_UP_FRAMES;
      due = MAX_CATCH_UP_FRAMES;
    }
    for (; due > 0; due--) {
      this.framesDue += 1;
      // Nobody in the room: the bot hears nothing (not even silence) until someone joins.
      if (this.members.size === 0) continue;
      this.mix.fill(0);
      for (const member of this.members) member.mixInto(this.mix);
      for (let i = 0; i < SAMPLES_PER_FRAME_8K; i++) {
        const sample = this.mix[i]!;
        this.mixPcm[i] = sample > 32767 ? 32767 : Math.max(sample, -32768);
      }
      this.stats.framesMixed += 1;
      // One buffer for every frame: a handler that keeps a frame copies it (see CallTransport).
      handler.onAudio(encodeMulaw(this.mixPcm, this.mixMulaw));
    }
    while (this.pendingMarks.length > 0 && this.pendingMarks[0]!.atMs <= nowMs) {
      handler.onMark(this.pendingMarks.shift()!.name);
    }
  }
}
