import { type TurnScheduler, realScheduler } from './turn-controller.js';

/** Default of SWITCHBOARD_TURN_DEADLINE_SECS: how long a caller may wait in silence, ms. */
export const DEFAULT_TURN_DEADLINE_MS = 8000;

/**
 * The promise a bot makes at the end of each caller turn: something (the answer, or an apology)
 * is heard within `deadlineMs`. The clock starts at the end of the first caller turn the bot owes
 * an answer to and stops only when bot audio goes out; further turns the caller takes meanwhile
 * do not restart it, so a caller who keeps speaking into silence is not made to wait forever.
 */
export class TurnDeadline {
  private owedSinceMs: number | undefined;
  private timer: unknown;
  private readonly clock: TurnScheduler;

  /** `clock`: the call's (shared/clock.ts), or only its `now` with the process's timers (unit tests' fake timers). */
  constructor(
    readonly deadlineMs: number,
    private readonly onExpired: () => void,
    clock: TurnScheduler | (() => number) = realScheduler,
  ) {
    this.clock = typeof clock === 'function' ? { ...realScheduler, now: clock } : clock;
  }

  private now(): number {
    return this.clock.now();
  }

  /** An answer to the turn that ended at `turnEndMs` is owed; the clock starts unless it already runs. */
  owe(turnEndMs: number): void {
    if (this.owedSinceMs !== undefined) return;
    this.owedSinceMs = turnEndMs;
    this.timer = this.clock.setTimeout(
      () => {
        this.timer = undefined;
        this.onExpired();
      },
      Math.max(0, turnEndMs + this.deadlineMs - this.now()),
    );
  }

  /** The caller hears the bot: nothing is owed any more. */
  met(): void {
    this.owedSinceMs = undefined;
    this.clock.clearTimeout(this.timer);
    this.timer = undefined;
  }

  /** An answer is owed (the caller has heard nothing since their turn ended). */
  get owed(): boolean {
    return this.owedSinceMs !== undefined;
  }

  /** An answer is owed and its time is up. */
  get overdue(): boolean {
    return this.owedSinceMs !== undefined && this.now() >= this.owedSinceMs + this.deadlineMs;
  }

  /** How long the caller has waited, ms (0 when nothing is owed). */
  waitedMs(): number {
    return this.owedSinceMs === undefined ? 0 : Math.round(this.now() - this.owedSinceMs);
  }

  dispose(): void {
    this.met();
  }
}
