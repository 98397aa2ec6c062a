import { setTimeout as sleep } from 'node:timers/promises';
import { ProviderError, isAbortError } from '../providers/types.js';

/**
 * The one retry layer of a call. A provider request is tried again only when its error says that
 * can help (a dropped connection, 408, 429, 5xx) and nothing it produced has been used yet: once
 * the caller heard a word, repeating the request would repeat the words. Waits are short because
 * a caller is waiting on the line. They are wall time: they wait on a vendor's servers, which a
 * call's scaled clock (shared/clock.ts) does not speed up.
 */
export const RETRY_DELAYS_MS = [200, 600] as const;

/** Whether attempt `attempt` (0 = the first) may be followed by another after this error. */
export function mayRetry(err: unknown, attempt: number, signal: AbortSignal): boolean {
  if (signal.aborted || isAbortError(err)) return false;
  return err instanceof ProviderError && err.retryable && attempt < RETRY_DELAYS_MS.length;
}

/** Resolves after the back-off for `attempt`, or at once when the signal aborts. */
export function retryDelay(attempt: number, signal: AbortSignal): Promise<void> {
  const ms = RETRY_DELAYS_MS[Math.min(attempt, RETRY_DELAYS_MS.length - 1)]!;
  return sleep(ms, undefined, { signal }).catch(() => undefined);
}

/**
 * A text stream (the LLM's sentences) that a second TTS attempt can read from the start: pieces
 * already pulled are replayed, then reading continues from the source. Only one read of the
 * source is ever in flight, so a piece pulled for an attempt that failed is not lost.
 */
export class ReplayableText {
  private readonly seen: string[] = [];
  private readonly source: AsyncIterator<string>;
  private done = false;
  private failure: { error: unknown } | undefined;
  private pending: Promise<void> | undefined;

  constructor(source: AsyncIterable<string>) {
    this.source = source[Symbol.asyncIterator]();
  }

  async *reader(): AsyncGenerator<string> {
    for (let i = 0; ; i++) {
      while (i >= this.seen.length) {
        if (this.failure) throw this.failure.error;
        if (this.done) return;
        await this.pull();
      }
      yield this.seen[i]!;
    }
  }

  private pull(): Promise<void> {
    // The source's error is stored, not left in a promise nobody may await.
    this.pending ??= this.source
      .next()
      .then(
        (next) => {
          if (next.done) this.done = true;
          else this.seen.push(next.value);
        },
        (error: unknown) => {
          this.failure = { error };
        },
      )
      .finally(() => {
        this.pending = undefined;
      });
    return this.pending;
  }
}
