import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { TurnDeadline } from './turn-deadline.js';

describe('TurnDeadline', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('expires the deadline after the first unanswered turn; later turns do not restart it', () => {
    let expired = 0;
    const deadline = new TurnDeadline(
      2000,
      () => (expired += 1),
      () => Date.now(),
    );
    const start = Date.now();
    deadline.owe(start);
    vi.advanceTimersByTime(1500);
    // The caller spoke again into the silence.
    deadline.owe(Date.now());
    expect(deadline.overdue).toBe(false);
    vi.advanceTimersByTime(500);
    expect(expired).toBe(1);
    expect(deadline.overdue).toBe(true);
    expect(deadline.waitedMs()).toBe(2000);
  });

  it('is met when the caller hears the bot, and the next turn starts a new clock', () => {
    let expired = 0;
    const deadline = new TurnDeadline(
      2000,
      () => (expired += 1),
      () => Date.now(),
    );
    deadline.owe(Date.now());
    vi.advanceTimersByTime(1000);
    deadline.met();
    expect(deadline.owed).toBe(false);
    vi.advanceTimersByTime(5000);
    expect(expired).toBe(0);
    deadline.owe(Date.now());
    vi.advanceTimersByTime(2000);
    expect(expired).toBe(1);
  });

  it('counts from the end of the turn, not from when the reply started', () => {
    let expired = 0;
    const deadline = new TurnDeadline(
      2000,
      () => (expired += 1),
      () => Date.now(),
    );
    deadline.owe(Date.now() - 1500);
    vi.advanceTimersByTime(500);
    expect(expired).toBe(1);
  });
});
