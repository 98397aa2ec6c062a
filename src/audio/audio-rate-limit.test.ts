import { describe, expect, it } from 'vitest';
import { AudioRateLimiter, MAX_AUDIO_MS_PER_MESSAGE, PeerBudget } from './audio-rate-limit.js';

/** A limiter on a clock the test moves. */
function limiterAt() {
  let nowMs = 1000;
  const limiter = new AudioRateLimiter(undefined, () => nowMs);
  return { limiter, advance: (ms: number) => (nowMs += ms) };
}

describe('AudioRateLimiter', () => {
  it('admits a real-time sender that delivers in clumps (a few hundred ms at a time, or after a 1.5 s stall), for hours', () => {
    const { limiter, advance } = limiterAt();
    // Two hours of 20 ms frames, delivered 15 at a time every 300 ms, with a 1.5 s stall and its
    // catch-up every minute.
    const refused = [];
    for (let clump = 0; clump < 24_000; clump++) {
      const stalled = clump % 200 === 199;
      advance(stalled ? 1500 : 300);
      for (let i = 0; i < (stalled ? 75 : 15); i++) if (limiter.admit(20) !== 'ok') refused.push(clump);
    }
    expect(refused).toEqual([]);
  });

  it('admits a sender whose clock runs 1% fast', () => {
    const { limiter, advance } = limiterAt();
    let refused = 0;
    for (let i = 0; i < 50 * 3600; i++) {
      advance(19.8);
      if (limiter.admit(20) !== 'ok') refused += 1;
    }
    expect(refused).toBe(0);
  });

  it('refuses a sender at three times real time once the burst is spent (about 10 s)', () => {
    const { limiter, advance } = limiterAt();
    let frames = 0;
    while (limiter.admit(20) === 'ok') {
      frames += 1;
      advance(20 / 3);
      if (frames > 10_000) break;
    }
    // The 10 s burst is spent at (3 - 2) x real time: about 10 s of wall time, 30 s of audio.
    expect(frames * 20).toBeGreaterThan(29_000);
    expect(frames * 20).toBeLessThan(31_000);
  });

  it('refuses audio all at once beyond the burst', () => {
    const { limiter } = limiterAt();
    for (let i = 0; i < 20; i++) expect(limiter.admit(MAX_AUDIO_MS_PER_MESSAGE)).toBe('ok');
    expect(limiter.admit(20)).toBe('too-fast');
  });

  it('refuses one message carrying more than MAX_AUDIO_MS_PER_MESSAGE', () => {
    const { limiter } = limiterAt();
    expect(limiter.admit(MAX_AUDIO_MS_PER_MESSAGE + 1)).toBe('too-long');
    expect(limiter.admit(MAX_AUDIO_MS_PER_MESSAGE)).toBe('ok');
  });
});

describe('PeerBudget (the flood counter of every inbound socket)', () => {
  const limits = { maxMessagesPerSec: 5, audio: { sustainedRealTimeFactor: 2, burstMs: 100 } };

  it('refuses the message past the per-second budget as a flood, and admits again once time has passed', () => {
    let nowMs = 0;
    const budget = new PeerBudget(limits, () => nowMs);
    for (let i = 0; i < 5; i++) expect(budget.message()).toBeUndefined();
    expect(budget.message()).toEqual({ kind: 'flood', reason: 'more than 5 messages a second' });
    nowMs += 1000;
    expect(budget.message()).toBeUndefined();
  });

  it('refuses one over-long audio message as too big, and audio beyond real time as a flood', () => {
    let nowMs = 0;
    const budget = new PeerBudget(limits, () => nowMs);
    expect(budget.audio(MAX_AUDIO_MS_PER_MESSAGE + 1)).toEqual({
      kind: 'too-big',
      reason: `audio message over ${MAX_AUDIO_MS_PER_MESSAGE} ms`,
    });
    expect(budget.audio(100)).toBeUndefined();
    expect(budget.audio(20)).toEqual({ kind: 'flood', reason: 'audio faster than real time' });
    nowMs += 10;
    expect(budget.audio(20)).toBeUndefined();
  });
});
