import { describe, expect, it } from 'vitest';
import { SentenceSplitter } from './sentence-splitter.js';

describe('SentenceSplitter', () => {
  it('emits sentences as soon as they end, across token boundaries', () => {
    const s = new SentenceSplitter();
    expect(s.push('Hello')).toEqual([]);
    expect(s.push(' there. How')).toEqual(['Hello there.']);
    expect(s.push(' are you? I am')).toEqual(['How are you?']);
    expect(s.push(' fine')).toEqual([]);
    expect(s.flush()).toBe('I am fine');
    expect(s.flush()).toBeUndefined();
  });

  it('does not split after common abbreviations or inside numbers', () => {
    const s = new SentenceSplitter();
    expect(s.push('Dr. Smith costs 3.50 dollars. Next ')).toEqual(['Dr. Smith costs 3.50 dollars.']);
  });

  it('cuts very long runs at a soft break', () => {
    const s = new SentenceSplitter(40);
    const out = s.push('one two three four five, six seven eight nine ten eleven twelve');
    expect(out[0]).toBe('one two three four five,');
    expect(out.every((piece) => piece.length <= 40)).toBe(true);
  });
});
