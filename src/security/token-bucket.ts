/**
 * A token bucket: holds up to `capacity` tokens, gains `refillPerSec` a second, and each use takes
 * some. A peer that stays under the refill rate is never refused; one that bursts may spend what the
 * bucket holds, then only what it earns. Every inbound rate limit (messages, audio) is one of these.
 */
export class TokenBucket {
  private level: number;
  private lastMs: number;

  constructor(
    readonly capacity: number,
    readonly refillPerSec: number,
    private readonly now: () => number = () => performance.now(),
  ) {
    if (!(capacity > 0) || !(refillPerSec > 0))
      throw new RangeError('a token bucket needs a positive capacity and refill rate');
    this.level = capacity;
    this.lastMs = now();
  }

  /** Takes `amount` tokens if the bucket holds them and says so; takes nothing when it does not. */
  take(amount = 1): boolean {
    this.refill();
    if (this.level < amount) return false;
    this.level -= amount;
    return true;
  }

  private refill(): void {
    const nowMs = this.now();
    this.level = Math.min(this.capacity, this.level + ((nowMs - this.lastMs) * this.refillPerSec) / 1000);
    this.lastMs = nowMs;
  }
}
