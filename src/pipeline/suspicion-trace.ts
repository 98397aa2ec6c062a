/**
 * What the instant pause decided, and when, in the caller's audio time, kept per call for its
 * summary: how much of the caller's speech a suspicion needed before it fired (what the code
 * decides) is told apart from how long the decision then waited for the machine (inference queued
 * behind other calls' windows, event-loop lag), which is the machine's. The turn-taking bench
 * (bench/turn-taking.ts) sets these beside the caller's own clock.
 */

/** Records kept per call: the latest ones (the interruption that matters is rarely the first event). */
export const MAX_SUSPICION_RECORDS = 32;
/** Frame arrival times kept: about five seconds of 20 ms frames, beyond any inference queue worth measuring. */
const ARRIVALS_KEPT = 256;

export type SuspicionOutcome =
  /** The reply paused: audible bot audio was silenced (`clear`). */
  | 'paused'
  /** A reply between two sentences: nothing audible, the next sentence held. */
  | 'held'
  /** Suspected, but the bot was not paused, and why. */
  | `not paused: ${string}`
  /** A likely window that started no suspicion, and why (too quiet for min_volume, not re-armed). */
  | `refused: ${string}`
  /** A suspicion ended without speech (a run of unlikely windows, or overdue). */
  | `dismissed: ${string}`
  /** start_secs of speech confirmed (with no suspicion before it, the instant pause never engaged). */
  | 'speech-start';

export interface SuspicionRecord {
  /** End of the window decided on: ms of caller audio since the stream's first frame. */
  atAudioMs: number;
  outcome: SuspicionOutcome;
  /**
   * From the arrival of the frame that completed that window to the decision, ms: the machine's
   * share (null when that frame's arrival is no longer known).
   */
  lagMs: number | null;
}

/**
 * The caller's audio clock (every frame the carrier sent, from the first) and the suspicion
 * records on it. The VAD counts only the audio it was fed, from when the call was ready; `vadStarted`
 * marks where that was on this clock.
 */
export class SuspicionTrace {
  private audioMs = 0;
  private vadOriginMs = 0;
  /**
   * Per frame, ring-buffered: its start and end on the audio clock and when it arrived
   * (performance.now(): the lag measured from it is this process's work, which is wall time).
   */
  private readonly frameStartMs = new Float64Array(ARRIVALS_KEPT);
  private readonly frameEndMs = new Float64Array(ARRIVALS_KEPT);
  private readonly arrivedAtMs = new Float64Array(ARRIVALS_KEPT);
  private frames = 0;
  private readonly kept: SuspicionRecord[] = [];

  /** A frame of `ms` of caller audio arrived now. */
  heard(ms: number, nowMs = performance.now()): void {
    const slot = this.frames % ARRIVALS_KEPT;
    this.frameStartMs[slot] = this.audioMs;
    this.audioMs += ms;
    this.frameEndMs[slot] = this.audioMs;
    this.arrivedAtMs[slot] = nowMs;
    this.frames += 1;
  }

  /** The VAD is fed from here on: its time 0 is the audio heard so far. */
  vadStarted(): void {
    this.vadOriginMs = this.audioMs;
  }

  /** A decision on the VAD window ending at `vadMs` (VAD time), made now. */
  record(vadMs: number | undefined, outcome: SuspicionOutcome, nowMs = performance.now()): void {
    const atAudioMs = vadMs === undefined ? this.audioMs : this.vadOriginMs + vadMs;
    const arrived = this.arrivalOf(atAudioMs);
    this.kept.push({
      atAudioMs: Math.round(atAudioMs),
      outcome,
      lagMs: arrived === undefined ? null : Math.round(nowMs - arrived),
    });
    if (this.kept.length > MAX_SUSPICION_RECORDS) this.kept.shift();
  }

  get records(): readonly SuspicionRecord[] {
    return this.kept;
  }

  /** When the frame holding the end of audio time `atAudioMs` arrived, if still known. */
  private arrivalOf(atAudioMs: number): number | undefined {
    for (let i = this.frames - 1; i >= Math.max(0, this.frames - ARRIVALS_KEPT); i--) {
      const slot = i % ARRIVALS_KEPT;
      if (this.frameEndMs[slot]! < atAudioMs) return undefined;
      if (this.frameStartMs[slot]! < atAudioMs) return this.arrivedAtMs[slot];
    }
    return undefined;
  }
}
