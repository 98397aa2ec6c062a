import { describe, expect, it } from 'vitest';
import { SUSPICION_DISMISS_WINDOWS, SpeechSuspicion } from './speech-suspicion.js';

const params = { confidence: 0.7, min_volume: 0.6 };

describe('SpeechSuspicion', () => {
  it('suspects speech at the first likely, loud window, and is settled by speech-start', () => {
    const suspicion = new SpeechSuspicion(params, 6);
    expect(suspicion.update(0.9, 0.3)).toBeNull(); // likely but quiet
    expect(suspicion.update(0.5, 0.9)).toBeNull(); // loud but unlikely
    expect(suspicion.update(0.9, 0.8)).toBe('suspected');
    expect(suspicion.update(0.9, 0.8)).toBeNull();
    suspicion.confirmed();
    expect(suspicion.active).toBe(false);
  });

  it('dismisses a burst once it has ended, and suspects the next one', () => {
    const suspicion = new SpeechSuspicion(params, 6);
    expect(suspicion.update(0.95, 0.9)).toBe('suspected');
    const after = Array.from({ length: SUSPICION_DISMISS_WINDOWS }, () => suspicion.update(0.1, 0.1));
    expect(after.at(-1)).toBe('dismissed');
    expect(after.slice(0, -1).every((e) => e === null)).toBe(true);
    expect(suspicion.update(0.95, 0.9)).toBe('suspected');
  });

  it('dismisses a murmur that never gets confirmed, and waits for a quiet window before suspecting again', () => {
    const suspicion = new SpeechSuspicion(params, 6);
    const events = Array.from({ length: 40 }, () => suspicion.update(0.9, 0.7)).filter((e) => e !== null);
    expect(events).toEqual(['suspected', 'dismissed']);
    expect(suspicion.update(0.2, 0.7)).toBeNull();
    expect(suspicion.update(0.9, 0.7)).toBe('suspected');
  });
});
