import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { Logger } from 'pino';
import type { LiveCalls } from './live-calls.js';

/** After the last call ends, this long without a call before memory is given back. */
export const QUIET_COLLECT_MS = 1000;
/**
 * Young-generation collections, this far apart, after the full ones. V8 shrinks its young
 * generation at a collection only when the allocation rate over its last ten collections (or
 * 5 s) is low; ten near-empty collections of a quiet server make it so at once, where it would
 * otherwise wait for the next collection some seconds on, which an idle server may never reach.
 */
const SHRINK_STEPS = 10;
const SHRINK_STEP_MS = 100;

/** Without options a full collection; `{ type: 'minor' }` the young generation only (V8 11 ignores `type: 'major'`). */
type Gc = (options?: { type: 'minor' }) => void;

/**
 * V8's `gc()`, which node only gives a script started with `--expose-gc`: turned on for the one
 * context made here, then off again, so no other code sees a `gc` it was not started with.
 */
function exposedGc(): Gc | undefined {
  const own = (globalThis as { gc?: Gc }).gc;
  if (typeof own === 'function') return own;
  try {
    setFlagsFromString('--expose-gc');
    const gc: unknown = runInNewContext('gc');
    return typeof gc === 'function' ? (gc as Gc) : undefined;
  } catch {
    return undefined;
  } finally {
    setFlagsFromString('--no-expose-gc');
  }
}

/**
 * Gives memory back once the server has no call. During calls V8 grows its young generation to
 * 32 MB and lets the calls' garbage (old-space objects, and the Buffers of their audio, whose
 * memory is freed only when a full collection finds them dead) pile up until the next full
 * collection, which an idle heap does not reach: 50 calls left 60–80 MB resident in a server that
 * then sat idle. So a second after the last call (and once start-up is over) it runs two full
 * collections (the second releases what the first's sweep freed) and then young-generation
 * collections until V8 shrinks that generation: about 20–50 ms of the event loop in all, then
 * 1 ms steps, and only while no call is live (a call that starts meanwhile stops it).
 */
export class QuietMemory {
  private static active: QuietMemory | undefined;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly liveCalls: LiveCalls,
    private readonly gc: Gc,
    private readonly log: Logger,
  ) {
    liveCalls.onIdle(() => this.schedule());
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
    if (quiet && quiet.liveCalls.count === 0) quiet.schedule();
  }

  stop(): void {
    clearTimeout(this.timer);
    if (QuietMemory.active === this) QuietMemory.active = undefined;
  }

  private schedule(): void {
    clearTimeout(this.timer);
    const added = this.liveCalls.addedCount;
    const quiet = () => this.liveCalls.count === 0 && this.liveCalls.addedCount === added;
    const later = (ms: number, run: () => void) => {
      this.timer = setTimeout(() => {
        if (quiet()) run();
      }, ms);
      this.timer.unref();
    };
    later(QUIET_COLLECT_MS, () => {
      const rssBefore = process.memoryUsage.rss();
      const startedAt = performance.now();
      this.gc();
      this.gc();
      const fullMs = performance.now() - startedAt;
      let steps = 0;
      const shrink = () => {
        this.gc({ type: 'minor' });
        steps += 1;
        if (steps < SHRINK_STEPS) later(SHRINK_STEP_MS, shrink);
        else
          this.log.debug(
            {
              fullGcMs: Math.round(fullMs),
              rssBeforeMb: Math.round(rssBefore / 2 ** 20),
              rssAfterMb: Math.round(process.memoryUsage.rss() / 2 ** 20),
            },
            'no call: memory given back',
          );
      };
      later(SHRINK_STEP_MS, shrink);
    });
  }
}
