import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { REAL_CLOCK, scaledClock } from './clock.js';

describe('a scaled clock', () => {
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'performance'] });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('reads `speed` ms for every wall ms, and its timers fire after their ms divided by `speed`', () => {
    const clock = scaledClock(3);
    const start = clock.now();
    const fired: string[] = [];
    clock.setTimeout(() => fired.push('timeout'), 300);
    const interval = clock.setInterval(() => fired.push('tick'), 60);
    vi.advanceTimersByTime(99);
    expect(fired.filter((f) => f === 'timeout')).toEqual([]);
    expect(clock.now() - start).toBeCloseTo(297, 6);
    vi.advanceTimersByTime(1);
    expect(fired.filter((f) => f === 'timeout')).toEqual(['timeout']);
    expect(fired.filter((f) => f === 'tick')).toHaveLength(5);
    clock.clearInterval(interval);
    vi.advanceTimersByTime(100);
    expect(fired.filter((f) => f === 'tick')).toHaveLength(5);
  });

  it('sleeps in its own time, and a sleep aborts with the signal', async () => {
    const clock = scaledClock(4);
    let woke = false;
    const sleeping = clock.sleep(400).then(() => (woke = true));
    await vi.advanceTimersByTimeAsync(99);
    expect(woke).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    await sleeping;
    expect(woke).toBe(true);

    const abort = new AbortController();
    const cut = clock.sleep(10_000, abort.signal);
    abort.abort(new Error('hung up'));
    await expect(cut).rejects.toThrow('hung up');
  });

  it('at speed 1 is the real clock, and refuses a speed that is not a positive number', () => {
    expect(scaledClock(1)).toBe(REAL_CLOCK);
    expect(REAL_CLOCK.speed).toBe(1);
    expect(() => scaledClock(0)).toThrow(/positive/);
    expect(() => scaledClock(Number.NaN)).toThrow(/positive/);
  });
});
