import type { Logger } from 'pino';
import type { BotConfigForCall } from '../bots/bot-config-service.js';
import type { CallObserver } from './call-observer.js';
import { CallMetrics, type CallSummary } from './call-metrics.js';
import type { CallStart, CallTransport } from './call-transport.js';
import type { Playout, PlayoutClock } from './playout.js';
import type { Clock, ClockTimer } from '../shared/clock.js';

/** What the lifecycle needs from the process: the call clock, the shared playout clock, the carrier's hang-up, the /metrics observer. */
export interface CallLifecycleDeps {
  /** The time the call runs on: every timer compared with the call's audio reads it (shared/clock.ts). */
  clock: Clock;
  playoutClock: PlayoutClock;
  log: Logger;
  /**
   * Ends the call at the carrier too (its `Carrier.hangUp`), after our side closed the stream:
   * a carrier that runs TwiML after <Connect> would otherwise keep the caller on the line.
   */
  hangUp?: (callSid: string) => Promise<void>;
  /**
   * A cold transfer at the carrier (its `Carrier.transfer`): the call leaves the bot for `target`
   * (E.164 or a SIP address), and the carrier ends the media stream.
   */
  transfer?: (callSid: string, target: string) => Promise<void>;
  /** Why the carrier cannot reach a transfer target at all (the sandbox reaches only its own numbers). */
  transferRefusal?: (target: string) => string | undefined;
  /** Told when the call starts and ends (/metrics counts calls and turn latencies). */
  observer?: { callStarted(): void; callEnded(reason: string, summary: CallSummary): void };
  /** Watches this call closely, to write its record (calls/). */
  record?: CallObserver;
}

/** A last phrase (goodbye, apology) may take this long to play before the stream is closed anyway. */
export const CLOSING_PHRASE_CAP_MS = 15_000;

/**
 * The life of one bot call, whichever engine answers it (the pipeline or a speech-to-speech
 * vendor): start, the max_duration timer, ending with a last phrase capped in time, closing the
 * stream and hanging up at the carrier, and the summary once the far end is gone. The engines own
 * only how they listen and answer; everything that decides when the call ends is here.
 *
 * States: live → ending (a closing phrase plays; the call ends when it has, or at the cap) →
 * ended (the transport said the leg is gone). A call may go from live to ended directly (the
 * caller hung up).
 */
export class CallLifecycle {
  /** Aborted when the call ends: every provider request of the call listens to it. */
  readonly abort = new AbortController();
  readonly metrics: CallMetrics;
  log: Logger;
  /** Our side closed the stream (rather than the far end hanging up). */
  private closedByUs = false;
  private endingValue = false;
  private endedValue = false;
  private started = false;
  /** Why the call is ending, once it is: the close reason the carrier sees. */
  private endReason = 'error';
  /** The websocket close code the call ends with (1001 when the server shuts down). */
  private closeCode = 1000;
  private maxDurationTimer: ClockTimer | undefined;
  private capTimer: ClockTimer | undefined;

  constructor(
    private readonly transport: CallTransport,
    private readonly config: BotConfigForCall,
    private readonly playout: Playout,
    private readonly deps: CallLifecycleDeps,
  ) {
    this.log = deps.log;
    this.metrics = new CallMetrics(deps.clock, deps.record);
  }

  /** A closing phrase is playing, or the call has ended. */
  get ending(): boolean {
    return this.endingValue || this.endedValue;
  }

  get ended(): boolean {
    return this.endedValue;
  }

  get hasStarted(): boolean {
    return this.started;
  }

  /** The carrier's id for the call (phone calls; undefined in a room). */
  get callSid(): string | undefined {
    return this.transport.callSid;
  }

  /** A phone is on the other end of the transport (not a room's participants). */
  get onPhone(): boolean {
    return this.transport.callSid !== undefined;
  }

  /** The call is a phone call on a carrier that can transfer it. */
  get canTransfer(): boolean {
    return this.transport.callSid !== undefined && this.deps.transfer !== undefined;
  }

  /**
   * Hands the caller to `target` (a cold transfer): the carrier dials it and ends our media
   * stream; our side closes the stream without hanging up, which would end the transferred call.
   * If the carrier refuses, the call ends as any other would.
   */
  transfer(target: string): void {
    const callSid = this.transport.callSid;
    if (!callSid || !this.deps.transfer) {
      this.endCall();
      return;
    }
    this.log.info({ target }, 'transferring the call');
    this.deps.transfer(callSid, target).then(
      () => this.endCall(this.endReason, { hangUp: false }),
      (err: unknown) => {
        this.log.warn({ err, target }, 'carrier transfer failed; ending the call');
        this.endCall();
      },
    );
  }

  /** The transport's start: Playout joins the clock, the call is counted and logged. */
  start(start: CallStart): void {
    this.log = this.log.child({ callSid: start.callSid, streamSid: start.streamSid });
    this.deps.playoutClock.add(this.playout);
    this.started = true;
    this.deps.observer?.callStarted();
    this.deps.record?.callStarted(start);
    this.log.info({ botConfigId: this.config.id, profile: this.config.body.bot_profile }, 'call started');
  }

  /** Calls `onReached` (which says goodbye) once the call has lasted max_duration. */
  armMaxDuration(maxDurationSecs: number, onReached: () => void): void {
    this.maxDurationTimer = this.deps.clock.setTimeout(() => {
      if (this.ending) return;
      this.log.info({ maxDurationSecs }, 'max duration reached');
      onReached();
    }, maxDurationSecs * 1000);
  }

  /** The close code the call will end with when it ends from our side. */
  setCloseCode(code: number): void {
    this.closeCode = code;
  }

  /**
   * The call ends with a last phrase: `speak` starts it (as a reply whose end calls `endCall`),
   * and if it has not played within CLOSING_PHRASE_CAP_MS the call ends anyway. False when the
   * call was already ending (it ends as it was going to).
   */
  endWith(reason: string, speak: () => void): boolean {
    if (this.ending) return false;
    this.endingValue = true;
    this.endReason = reason;
    this.capTimer = this.deps.clock.setTimeout(() => this.endCall(), CLOSING_PHRASE_CAP_MS);
    speak();
    return true;
  }

  /** Our side ends the call: close the stream and (unless the call was handed on) hang up at the carrier. */
  endCall(reason: string = this.endReason, options: { hangUp: boolean } = { hangUp: true }): void {
    if (this.endedValue) return;
    const callSid = this.transport.callSid;
    this.closedByUs = true;
    this.transport.close(this.closeCode, reason);
    if (callSid && this.deps.hangUp && options.hangUp) {
      this.deps.hangUp(callSid).catch((err: unknown) => this.log.warn({ err }, 'carrier hang-up failed'));
    }
  }

  /**
   * The transport's end (the leg is gone, from either side): timers stop, every request of the
   * call is aborted, and the summary is logged and counted. False when it had already ended;
   * the engine then releases its providers.
   */
  finish(reason: string): boolean {
    if (this.endedValue) return false;
    this.endedValue = true;
    this.abort.abort();
    this.deps.clock.clearTimeout(this.maxDurationTimer);
    this.deps.clock.clearTimeout(this.capTimer);
    this.deps.playoutClock.delete(this.playout);
    const summary = this.metrics.summary();
    this.log.info({ reason, ...summary, transport: this.transport.stats }, 'call ended');
    if (this.started) this.deps.observer?.callEnded(reason, summary);
    this.deps.record?.callEnded(reason, this.closedByUs, summary);
    return true;
  }
}

/**
 * Caller frames held while a provider's socket opens, up to a limit (older ones are kept: the
 * start of what the caller said matters most). Frames are copied: the transport lends them only
 * for the duration of onAudio (see CallTransportHandler).
 */
export class HeldFrames {
  private frames: Uint8Array[] = [];

  constructor(private readonly maxFrames: number) {}

  hold(frame: Uint8Array): void {
    // A copy: a Buffer's slice() is a view that would keep the carrier's 8 KB pool chunk alive.
    if (this.frames.length < this.maxFrames) this.frames.push(new Uint8Array(frame));
  }

  /** Hands every held frame to `sink`, oldest first, and forgets them. */
  release(sink: (frame: Uint8Array) => void): void {
    const frames = this.frames;
    this.frames = [];
    for (const frame of frames) sink(frame);
  }
}
