import { describe, expect, it } from 'vitest';
import { SUSPICION_DISMISS_WINDOWS, SUSPICION_START_PROBABILITY, SpeechSuspicion } from './speech-suspicion.js';

const params = { confidence: 0.7, min_volume: 0.6 };

describe('SpeechSuspicion', () => {
  it('suspects speech at the first likely, loud window, and is settled by speech-start', () => {
    const suspicion = new SpeechSuspicion(params, 6);
    expect(suspicion.update(0.9, 0.3)).toBeNull(); // likely but quiet
    expect(suspicion.update(0.4, 0.9)).toBeNull(); // loud but unlikely
    expect(suspicion.update(0.9, 0.8)).toBe('suspected');
    expect(suspicion.update(0.9, 0.8)).toBeNull();
    suspicion.confirmed();
    expect(suspicion.active).toBe(false);
  });

  it("starts at Silero's own threshold below a higher confidence, and lives on windows above confidence", () => {
    const suspicion = new SpeechSuspicion(params, 6);
    // An onset that begins unvoiced: a window or two between 0.5 and the 0.7 of confidence.
    expect(suspicion.update(SUSPICION_START_PROBABILITY, 0.8)).toBe('suspected');
    // Windows below confidence count towards the dismissal …
    expect(suspicion.update(0.6, 0.8)).toBeNull();
    expect(suspicion.update(0.6, 0.8)).toBeNull();
    expect(suspicion.update(0.6, 0.8)).toBe('dismissed');
    // … and only a window below the start probability re-arms it: no stop and resume on a murmur.
    expect(suspicion.update(0.6, 0.8)).toBeNull();
    expect(suspicion.update(0.4, 0.8)).toBeNull();
    expect(suspicion.update(0.55, 0.8)).toBe('suspected');
    // A lower confidence is its own start.
    const low = new SpeechSuspicion({ confidence: 0.3, min_volume: 0.6 }, 6);
    expect(low.update(0.35, 0.8)).toBe('suspected');
  });

  it('dismisses a burst once it has ended, and suspects the next one', () => {
    const suspicion = new SpeechSuspicion(params, 6);
    expect(suspicion.update(0.95, 0.9)).toBe('suspected');
    const after = Array.from({ length: SUSPICION_DISMISS_WINDOWS }, () => suspicion.update(0.1, 0.1));
    expect(after.at(-1)).toBe('dismissed');
    expect(after.slice(0, -1).every((e) => e === null)).toBe(true);
    expect(suspicion.update(0.95, 0.9)).toBe('suspected');
  });

  it('counts the wait for confirmation from the last loud, likely window: a soft onset is not dismissed', () => {
    const suspicion = new SpeechSuspicion(params, 6);
    expect(suspicion.update(0.9, 0.7)).toBe('suspected');
    // Likely windows whose volume flickers around min_volume, well past start_secs + the extra windows.
    const events = Array.from({ length: 24 }, (_, w) => suspicion.update(0.95, w % 8 === 7 ? 0.65 : 0.55));
    expect(events.every((e) => e === null)).toBe(true);
    // Once the loud windows stop, the wait runs out.
    const after = Array.from({ length: 6 + 12 }, () => suspicion.update(0.95, 0.55));
    expect(after.filter((e) => e !== null)).toEqual(['dismissed']);
  });

  it('dismisses a murmur that never gets confirmed, and waits for a quiet window before suspecting again', () => {
    const suspicion = new SpeechSuspicion(params, 6);
    const events = Array.from({ length: 40 }, () => suspicion.update(0.9, 0.7)).filter((e) => e !== null);
    expect(events).toEqual(['suspected', 'dismissed']);
    expect(suspicion.update(0.2, 0.7)).toBeNull();
    expect(suspicion.update(0.9, 0.7)).toBe('suspected');
  });
});
