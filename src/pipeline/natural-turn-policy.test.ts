import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { isBackchannel, NATURAL_TURN_POLICY, naturalExtraWaitMs } from './natural-turn-policy.js';
import { type TurnDecision, TurnController, realScheduler } from './turn-controller.js';

describe('natural-conversation turn policy: reading the words', () => {
  it('ends a complete thought at once and holds a trailing filler or conjunction open', () => {
    expect(naturalExtraWaitMs('Book a table for two.')).toBe(0);
    expect(naturalExtraWaitMs('Can you hear me?')).toBe(0);
    expect(naturalExtraWaitMs('I would like a table for two and')).toBe(1500);
    expect(naturalExtraWaitMs('So, um')).toBe(1500);
    expect(naturalExtraWaitMs('I was thinking,')).toBe(1500);
    expect(naturalExtraWaitMs('a table for two')).toBe(400);
    expect(naturalExtraWaitMs('')).toBe(0);
  });

  it('knows an acknowledgement from an answer', () => {
    for (const text of ['mm-hmm', 'Mm hmm.', 'uh-huh', 'Yeah.', 'okay', 'I see', 'right, right'])
      expect(isBackchannel(text), text).toBe(true);
    for (const text of ['yes I want the blue one', 'stop', 'wait a second', 'no'])
      expect(isBackchannel(text), text).toBe(false);
  });
});

describe('TurnController with the natural-conversation policy', () => {
  let decisions: TurnDecision[];
  beforeEach(() => {
    vi.useFakeTimers();
    decisions = [];
  });
  afterEach(() => vi.useRealTimers());
  const controller = () => new TurnController((d) => decisions.push(d), NATURAL_TURN_POLICY, realScheduler);

  it('answers a complete sentence as soon as the caller pauses', () => {
    const c = controller();
    c.onVadStart();
    c.onFinal('Book a table for two.');
    c.onVadStop();
    c.onFinal(''); // Finalize's answer: nothing after the words already in
    expect(decisions.at(-1)).toEqual({ type: 'user-turn', text: 'Book a table for two.' });
  });

  it('waits after a trailing "and" for the rest, and the turn carries both parts', () => {
    const c = controller();
    c.onVadStart();
    c.onFinal('I need a table for two and');
    c.onVadStop();
    c.onFinal(''); // Finalize's answer: nothing after the words already in
    vi.advanceTimersByTime(1000);
    expect(decisions.map((d) => d.type)).toEqual(['user-speaking', 'finalize-stt']);
    c.onVadStart();
    c.onFinal('a high chair.');
    c.onVadStop();
    c.onFinal(''); // Finalize's answer: nothing after the words already in
    expect(decisions.at(-1)).toEqual({ type: 'user-turn', text: 'I need a table for two and a high chair.' });
  });

  it('never holds one turn open longer than the maximum, however many fillers', () => {
    const c = controller();
    c.onVadStart();
    c.onFinal('so um');
    c.onVadStop();
    c.onFinal(''); // Finalize's answer: nothing after the words already in
    vi.advanceTimersByTime(1400);
    c.onVadStart();
    c.onFinal('and uh');
    c.onVadStop();
    c.onFinal(''); // Finalize's answer: nothing after the words already in
    vi.advanceTimersByTime(1099);
    expect(decisions.filter((d) => d.type === 'user-turn')).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(decisions.at(-1)).toEqual({ type: 'user-turn', text: 'so um and uh' });
  });

  it('lets "mm-hmm" pass while the bot talks: no barge-in and no new turn', () => {
    const c = controller();
    c.setBotSpeaking(true);
    c.onVadStart();
    c.onInterim('mm-hmm');
    c.onVadStop();
    c.onFinal('Mm-hmm.');
    vi.advanceTimersByTime(3000);
    expect(decisions.map((d) => d.type)).toEqual(['user-speaking', 'finalize-stt', 'false-alarm']);
  });

  it('still lets real words cut the bot off', () => {
    const c = controller();
    c.setBotSpeaking(true);
    c.onVadStart();
    c.onInterim('wait');
    expect(decisions.map((d) => d.type)).toEqual(['user-speaking', 'barge-in']);
  });
});
