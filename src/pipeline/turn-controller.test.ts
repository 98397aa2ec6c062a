import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { type TurnDecision, TurnController, realScheduler } from './turn-controller.js';

let decisions: TurnDecision[];
const types = () => decisions.map((d) => d.type);

beforeEach(() => {
  vi.useFakeTimers();
  decisions = [];
});
afterEach(() => vi.useRealTimers());

function controller(minInterruptionWords = 0) {
  return new TurnController(
    (d) => decisions.push(d),
    { minInterruptionWords, finalTranscriptWaitMs: 1000 },
    realScheduler,
  );
}

describe('TurnController', () => {
  it('asks STT to finalise at VAD stop even with a final in hand, and ends the turn on the final that answers', () => {
    const c = controller();
    c.onVadStart();
    c.onInterim('book a');
    c.onFinal('Book a table');
    // The caller went on after that final; no interim has shown those words yet.
    c.onVadStop();
    expect(types()).toEqual(['user-speaking', 'finalize-stt']);
    c.onFinal('for two.');
    expect(decisions.at(-1)).toEqual({ type: 'user-turn', text: 'Book a table for two.' });
  });

  it('ends the turn on an empty final answering the Finalize, with the words already in', () => {
    const c = controller();
    c.onVadStart();
    c.onFinal('Book a table for two.');
    c.onVadStop();
    c.onFinal('');
    expect(decisions).toEqual([
      { type: 'user-speaking' },
      { type: 'finalize-stt' },
      { type: 'user-turn', text: 'Book a table for two.' },
    ]);
  });

  it('ends the turn at VAD stop, without Finalize, when the finals already cover the speech', () => {
    const c = controller();
    c.onVadStart();
    // The vendor's endpointing fired in the caller's pauses: every word is final, up to 2300 ms.
    c.onFinal('Eggs, milk,', 1500);
    c.onFinal('and two lemons.', 2300);
    c.onVadStop(2000);
    expect(decisions).toEqual([{ type: 'user-speaking' }, { type: 'user-turn', text: 'Eggs, milk, and two lemons.' }]);
  });

  it('asks STT to finalise speech after the last final, and waits for the final that covers it', () => {
    const c = controller();
    c.onVadStart();
    c.onFinal('Eggs, milk,', 1500);
    // The caller spoke on after that final, until 2600 ms.
    c.onVadStop(2600);
    expect(types()).toEqual(['user-speaking', 'finalize-stt']);
    // A final for an earlier stretch does not end the turn: the rest is still to come.
    c.onFinal('some bread', 2000);
    expect(types()).toEqual(['user-speaking', 'finalize-stt']);
    c.onFinal('and two lemons.', 2900);
    expect(decisions.at(-1)).toEqual({ type: 'user-turn', text: 'Eggs, milk, some bread and two lemons.' });
  });

  it('waits when an interim came after the last final, even if the finals reach the VAD stop', () => {
    const c = controller();
    c.onVadStart();
    c.onFinal('Eggs, milk,', 2300);
    c.onInterim('and');
    c.onVadStop(2000);
    expect(types()).toEqual(['user-speaking', 'finalize-stt']);
    c.onFinal('and lemons.', 2800);
    expect(decisions.at(-1)).toEqual({ type: 'user-turn', text: 'Eggs, milk, and lemons.' });
  });

  it('drops at once speech whose covering final holds no words', () => {
    const c = controller();
    c.onVadStart();
    c.onVadStop(800);
    c.onFinal('', 1100);
    expect(types()).toEqual(['user-speaking', 'finalize-stt', 'false-alarm']);
  });

  it('asks STT to finalise and waits for the final when only interim text exists', () => {
    const c = controller();
    c.onVadStart();
    c.onInterim('hello');
    c.onVadStop();
    expect(types()).toEqual(['user-speaking', 'finalize-stt']);
    vi.advanceTimersByTime(300);
    c.onFinal('Hello there.');
    expect(decisions.at(-1)).toEqual({ type: 'user-turn', text: 'Hello there.' });
  });

  it('falls back to the interim text, or reports a false alarm, when no final comes', () => {
    const c = controller();
    c.onVadStart();
    c.onInterim('maybe this');
    c.onVadStop();
    vi.advanceTimersByTime(1000);
    expect(decisions.at(-1)).toEqual({ type: 'user-turn', text: 'maybe this' });
    c.onVadStart();
    c.onVadStop();
    vi.advanceTimersByTime(1000);
    expect(decisions.at(-1)).toEqual({ type: 'false-alarm' });
  });

  it('joins several finals of one turn and resumes waiting when the caller goes on', () => {
    const c = controller();
    c.onVadStart();
    c.onFinal('I want');
    c.onInterim('to');
    c.onVadStop();
    c.onVadStart(); // speaks again before the wait ends
    vi.advanceTimersByTime(2000);
    expect(types()).not.toContain('user-turn');
    c.onFinal('to fly tomorrow.');
    c.onVadStop();
    c.onFinal('');
    expect(decisions.at(-1)).toEqual({ type: 'user-turn', text: 'I want to fly tomorrow.' });
  });

  it('barges in on confirmed speech only while the bot speaks, once per reply', () => {
    const c = controller();
    c.onVadStart();
    expect(types()).not.toContain('barge-in');
    c.onFinal('hi');
    c.onVadStop();
    c.setBotSpeaking(true);
    c.onVadStart();
    c.onVadStop();
    c.onVadStart();
    expect(types().filter((t) => t === 'barge-in')).toHaveLength(1);
    c.setBotSpeaking(false);
    c.setBotSpeaking(true);
    c.onVadStart();
    expect(types().filter((t) => t === 'barge-in')).toHaveLength(2);
  });

  it('with a minimum word count, waits for enough words before interrupting', () => {
    const c = controller(3);
    c.setBotSpeaking(true);
    c.onVadStart();
    c.onInterim('mm hmm');
    expect(types()).not.toContain('barge-in');
    c.onInterim('wait, stop please');
    expect(types()).toContain('barge-in');
  });

  it('takes words that arrive without VAD speech as a turn', () => {
    const c = controller();
    c.onFinal('quiet words');
    expect(decisions).toEqual([{ type: 'user-turn', text: 'quiet words' }]);
  });
});
