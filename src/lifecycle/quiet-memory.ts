import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { Logger } from 'pino';
import type { LiveCalls } from './live-calls.js';

/** After the last call ends, this long without a call before the garbage calls left is collected. */
export const QUIET_COLLECT_MS = 1000;
/**
 * Then this long, still without a call, before a second collection. V8 gives back the young
 * generation only at a collection that follows some seconds of little allocation (it measures
 * the rate over the last 5 s), so the first one, right after the calls, keeps it.
 */
export const QUIET_SHRINK_MS = 6000;

/**
 * V8's `gc()`, which node only gives a script started with `--expose-gc`: turned on for the one
 * context made here, then off again, so no other code sees a `gc` it was not started with.
 */
function exposedGc(): (() => void) | undefined {
  const own = (globalThis as { gc?: () => void }).gc;
  if (typeof own === 'function') return own;
  try {
    setFlagsFromString('--expose-gc');
    const gc: unknown = runInNewContext('gc');
    return typeof gc === 'function' ? (gc as () => void) : undefined;
  } catch {
    return undefined;
  } finally {
    setFlagsFromString('--no-expose-gc');
  }
}

/**
 * Gives memory back once the server has no call. During calls V8 grows its young generation to
 * 32 MB and lets the calls' garbage (old-space objects, the Buffers of their audio, held outside
 * the heap until a full collection) pile up until the next full collection, which an idle heap
 * never reaches: 50 calls left about 60 MB resident in a server that then sat idle for good. A
 * full collection of an idle server's heap takes 20 to 50 ms of the event loop; here it runs
 * only when no call is live (a call that starts meanwhile cancels it), twice: a second after the
 * last call (the garbage), and again some seconds later (the young generation).
 */
export class QuietMemory {
  private static active: QuietMemory | undefined;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly liveCalls: LiveCalls,
    private readonly gc: () => void,
    private readonly log: Logger,
  ) {
    liveCalls.onIdle(() => this.schedule(QUIET_COLLECT_MS, true));
  }

  /** Whether this process can collect on demand; then it does so when quiet, else nothing happens. */
  static start(liveCalls: LiveCalls, log: Logger): QuietMemory | undefined {
    const gc = exposedGc();
    if (!gc) {
      log.warn('V8 refused to expose gc(): memory left by calls is given back only when V8 decides to');
      return undefined;
    }
    QuietMemory.active = new QuietMemory(liveCalls, gc, log);
    return QuietMemory.active;
  }

  /**
   * Start-up is over (the call parts are loaded): what loading left behind is collected the same
   * way, once no call is live, so a server waiting for its first call holds only what it needs.
   */
  static afterStartUp(): void {
    const quiet = QuietMemory.active;
    if (quiet && quiet.liveCalls.count === 0) quiet.schedule(QUIET_COLLECT_MS, true);
  }

  stop(): void {
    clearTimeout(this.timer);
    if (QuietMemory.active === this) QuietMemory.active = undefined;
  }

  private schedule(delayMs: number, first: boolean): void {
    clearTimeout(this.timer);
    const added = this.liveCalls.addedCount;
    this.timer = setTimeout(() => {
      if (this.liveCalls.count > 0 || this.liveCalls.addedCount !== added) return;
      const before = process.memoryUsage.rss();
      const startedAt = performance.now();
      this.gc();
      this.log.debug(
        {
          gcMs: Math.round(performance.now() - startedAt),
          rssBeforeMb: Math.round(before / 2 ** 20),
          rssAfterMb: Math.round(process.memoryUsage.rss() / 2 ** 20),
        },
        'no call: garbage collected',
      );
      if (first) this.schedule(QUIET_SHRINK_MS, false);
    }, delayMs);
    this.timer.unref();
  }
}
