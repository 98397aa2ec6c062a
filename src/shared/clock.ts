/**
 * The time a call runs on. Audio has its own time (20 ms a frame), and everything on a call that
 * is compared with it (Playout's pacing against the carrier's playback, the audio rate limit, the
 * turn timers, `max_duration`, the phone simulator's frames and playback) reads one `Clock`, handed
 * down as a dependency.
 *
 * The real clock is wall time. A scaled clock runs `speed` times faster than wall time: a call on
 * it (server, simulator and emulators sharing one speed) is the same call, heard by a caller
 * whose second lasts 1/speed of a wall second. It is useful wherever the pace of the audio is not
 * what is being looked at: dry runs of a scenario, the test suite. What stays on wall time is
 * what the call does not compare with audio: network timeouts, retries' backoff, CPU batching,
 * process draining (each says so where it waits).
 */

/** A timer from `Clock.setTimeout` or `Clock.setInterval`. */
export type ClockTimer = ReturnType<typeof setTimeout>;

export interface Clock {
  /** How many times faster than wall time this clock runs (1: real time). */
  readonly speed: number;
  /** Monotonic time, ms. */
  now(): number;
  /** Calls `fn` once `ms` of this clock's time have passed. */
  setTimeout(fn: () => void, ms: number): ClockTimer;
  /** Calls `fn` every `ms` of this clock's time. */
  setInterval(fn: () => void, ms: number): ClockTimer;
  clearTimeout(timer: ClockTimer | undefined): void;
  clearInterval(timer: ClockTimer | undefined): void;
  /** Resolves after `ms` of this clock's time, or rejects with the signal's reason when it aborts first. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

class ScaledClock implements Clock {
  /** Wall time at which this clock reads the same as `performance.now()`: it starts there. */
  private readonly originMs = performance.now();

  constructor(readonly speed: number) {
    if (!(speed > 0) || !Number.isFinite(speed))
      throw new Error(`a clock's speed must be a positive number, not ${speed}`);
  }

  now(): number {
    const wallMs = performance.now();
    return this.speed === 1 ? wallMs : this.originMs + (wallMs - this.originMs) * this.speed;
  }

  setTimeout(fn: () => void, ms: number): ClockTimer {
    return setTimeout(fn, ms / this.speed);
  }

  setInterval(fn: () => void, ms: number): ClockTimer {
    return setInterval(fn, ms / this.speed);
  }

  clearTimeout(timer: ClockTimer | undefined): void {
    clearTimeout(timer);
  }

  clearInterval(timer: ClockTimer | undefined): void {
    clearInterval(timer);
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      const onAbort = () => {
        clearTimeout(timer);
        reject(signal!.reason);
      };
      const timer = setTimeout(() => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      }, ms / this.speed);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }
}

/** Wall time. */
export const REAL_CLOCK: Clock = new ScaledClock(1);

/** A clock `speed` times faster than wall time (1 is the real clock). */
export function scaledClock(speed: number): Clock {
  return speed === 1 ? REAL_CLOCK : new ScaledClock(speed);
}
