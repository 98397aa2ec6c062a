import { describe, expect, it } from 'vitest';
import {
  CARRIED_AUDIO_MS,
  MAX_TRANSCRIPT_CHARS_PER_SEC,
  MAX_TURN_TEXT_CHARS,
  TRANSCRIPT_SLACK_CHARS,
  TranscriptGuard,
  capTurnText,
} from './transcript-guard.js';

describe('TranscriptGuard', () => {
  it('accepts what the caller could have said in the audio since the last turn, and refuses more', () => {
    const guard = new TranscriptGuard();
    guard.heard(5000);
    const allowed = TRANSCRIPT_SLACK_CHARS + 5 * MAX_TRANSCRIPT_CHARS_PER_SEC;
    expect(guard.allowedChars()).toBe(allowed);
    // Fast speech for five seconds fits easily.
    const said = 'could we have a table by the window at eight tonight please';
    expect(guard.acceptFinal(said)).toBe(true);
    expect(guard.fitsInterim('x'.repeat(100_000))).toBe(false);
    expect(guard.acceptFinal('x'.repeat(100_000))).toBe(false);
    expect(guard.faults).toBe(2);
    // The finals of one turn add up.
    expect(guard.acceptFinal('y'.repeat(allowed - said.length + 1))).toBe(false);
    expect(guard.acceptFinal('y'.repeat(allowed - said.length))).toBe(true);
  });

  it('starts counting again after a turn, with the last seconds of the one before', () => {
    const guard = new TranscriptGuard();
    guard.heard(20_000);
    expect(guard.acceptFinal('z'.repeat(800))).toBe(true);
    guard.turnEnded();
    expect(guard.allowedChars()).toBe(
      TRANSCRIPT_SLACK_CHARS + (CARRIED_AUDIO_MS / 1000) * MAX_TRANSCRIPT_CHARS_PER_SEC,
    );
    expect(guard.acceptFinal('z'.repeat(800))).toBe(false);
  });
});

describe('capTurnText', () => {
  it('keeps a turn up to the cap whole, and cuts a longer one at a word', () => {
    expect(capTurnText('a short turn')).toBe('a short turn');
    const long = 'word '.repeat(1000).trim();
    const capped = capTurnText(long);
    expect(capped.length).toBeLessThanOrEqual(MAX_TURN_TEXT_CHARS);
    expect(capped.endsWith('word')).toBe(true);
    expect(capTurnText('x'.repeat(5000))).toHaveLength(MAX_TURN_TEXT_CHARS);
  });
});
