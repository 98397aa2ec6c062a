import type { TtsOutput } from '../types.js';

/** Items (a reply's outputs, audio chunks) handed from callbacks to one consuming generator, in order. */
export class OutputQueue<T = TtsOutput> {
  private items: T[] = [];
  /** Index of the next item to hand out (a cursor, so taking one is O(1)). */
  private head = 0;
  private ended = false;
  private failed = false;
  private error: unknown;
  private wake: (() => void) | undefined;

  push(item: T): void {
    if (this.ended) return;
    this.items.push(item);
    this.notify();
  }

  end(): void {
    this.ended = true;
    this.notify();
  }

  /** Ends now, dropping what was not taken yet (an interrupted reply yields nothing more). */
  discard(): void {
    this.items = [];
    this.head = 0;
    this.failed = false;
    this.end();
  }

  /** Ends with an error, thrown once the items already queued were taken. */
  fail(error: unknown): void {
    if (this.ended) return;
    this.ended = true;
    this.failed = true;
    this.error = error;
    this.notify();
  }

  async *drain(): AsyncGenerator<T> {
    for (;;) {
      if (this.head < this.items.length) {
        const item = this.items[this.head]!;
        this.head += 1;
        if (this.head === this.items.length) {
          this.items = [];
          this.head = 0;
        }
        yield item;
        continue;
      }
      if (this.ended) {
        if (this.failed) throw this.error;
        return;
      }
      await new Promise<void>((resolve) => {
        this.wake = resolve;
      });
    }
  }

  private notify(): void {
    const wake = this.wake;
    this.wake = undefined;
    wake?.();
  }
}
