import type { CallSummary, TurnTimings } from './call-metrics.js';
import type { CallStart } from './call-transport.js';

/**
 * Who watches one call closely enough to write it down afterwards (the call record). The call
 * reports what only it knows, as it happens; every method is cheap and synchronous, and nothing
 * it does can change the call. Times are ms on the call's clock (shared/clock.ts).
 */
export interface CallObserver {
  /** The transport's start. */
  callStarted(start: CallStart): void;
  /**
   * A reply began: the LLM request goes out now (for an answer). `timings` is the reply's own
   * object, filled in as the reply goes (first token, first audio, first frame, interrupted);
   * its stages count from `originMs`: the end of the caller's turn when `afterCallerSpoke` (the
   * VAD's stop, or the vendor's), else the reply's own start.
   */
  replyStarted(timings: TurnTimings, originMs: number, afterCallerSpoke: boolean): void;
  /**
   * The reply stopped before it was played out: the caller cut it (`timings.interrupted`), or the
   * call ended under it. The caller heard `heardMs` of the `producedMs` of audio made for it, and
   * `heardText` of its words when the engine can tell (else the observer estimates by time).
   */
  replyCut(timings: TurnTimings, heardMs: number, producedMs: number, heardText?: string): void;
  /** The reply was paused on suspected speech (its audio cleared from the line), or resumed. */
  replyPaused(): void;
  replyResumed(): void;
  /**
   * The call is over: `reason` is the close reason, `ourSide` whether this side ended it (a
   * goodbye, max_duration, an error, a shutdown) rather than the far end.
   */
  callEnded(reason: string, ourSide: boolean, summary: CallSummary): void;
}
