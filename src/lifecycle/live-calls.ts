import type { Logger } from 'pino';

/** The close reason every call ended by a shutdown carries. */
export const SHUTDOWN_REASON = 'server shutting down';

/**
 * After the drain limit, the goodbyes get this long before the calls still live are closed
 * anyway (a session gives its goodbye 15 s, a room 20 s from max_duration).
 */
const GOODBYE_GRACE_MS = 20_000;

/** One live conversation a shutdown must let finish: a phone call, a room, a dial-in caller on hold. */
export interface LiveCall {
  /** The drain limit has come: the bot says goodbye, then the call closes with 1001. */
  endWithGoodbye(): void;
  /** A second signal, or the goodbye ran out of time: close with 1001 now. */
  endNow(): void;
  /** The server has begun draining (e.g. a room nobody can join any more closes if it is empty); not called for calls added later. */
  onDrain?(): void;
}

/**
 * The calls this process is serving, and whether it still takes new ones. The owners of calls
 * (media streams, rooms, dial-in) register each one and release it when it ends; routes that
 * start new work check `isDraining`; the server's shutdown waits for `whenIdle`.
 */
export class LiveCalls {
  private readonly calls = new Set<LiveCall>();
  private idleWaiters: Array<() => void> = [];
  private idleListeners: Array<() => void> = [];
  private draining = false;
  private added = 0;

  get isDraining(): boolean {
    return this.draining;
  }

  get count(): number {
    return this.calls.size;
  }

  /** Calls registered since the process started: whether any began between two looks. */
  get addedCount(): number {
    return this.added;
  }

  /** `listener` runs each time the last live call ends. */
  onIdle(listener: () => void): void {
    this.idleListeners.push(listener);
  }

  /** Registers a live call; call the returned function when it has ended (more than once is harmless). */
  add(call: LiveCall): () => void {
    this.added += 1;
    this.calls.add(call);
    return () => {
      if (this.calls.delete(call)) this.wakeIfIdle();
    };
  }

  /** From now on new calls and rooms are refused; the live ones go on. */
  startDraining(): void {
    if (this.draining) return;
    this.draining = true;
    for (const call of [...this.calls]) call.onDrain?.();
  }

  /** Resolves once no call is live (at once when none is). */
  whenIdle(): Promise<void> {
    if (this.calls.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /**
   * The first stage of a shutdown: refuse new calls, let the live ones run up to `limitMs`, then
   * have every bot say goodbye. Resolves as soon as no call is live, or once the goodbyes have
   * had their time (whatever is left is for `endAllNow`).
   */
  async drain(limitMs: number, log: Logger): Promise<void> {
    this.startDraining();
    log.info(
      { liveCalls: this.count, drainTimeoutSecs: limitMs / 1000 },
      'draining: new calls are refused, live calls go on',
    );
    if (await settlesWithin(this.whenIdle(), limitMs)) return;
    log.info({ liveCalls: this.count }, 'drain limit reached: the bots say goodbye');
    this.endAllWithGoodbye();
    if (await settlesWithin(this.whenIdle(), GOODBYE_GRACE_MS)) return;
    log.warn({ liveCalls: this.count }, 'goodbyes did not finish in time; closing the calls');
  }

  endAllWithGoodbye(): void {
    for (const call of [...this.calls]) call.endWithGoodbye();
  }

  endAllNow(): void {
    for (const call of [...this.calls]) call.endNow();
  }

  private wakeIfIdle(): void {
    if (this.calls.size > 0) return;
    const waiters = this.idleWaiters;
    this.idleWaiters = [];
    for (const wake of waiters) wake();
    for (const listener of this.idleListeners) listener();
  }
}

/** Whether `promise` settles within `ms`; the timer is cleared either way. */
async function settlesWithin(promise: Promise<void>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  try {
    return await Promise.race([promise.then(() => true), timeout]);
  } finally {
    clearTimeout(timer);
  }
}
