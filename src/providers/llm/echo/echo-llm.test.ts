import { describe, expect, it } from 'vitest';
import { collectDeltas, context, textOf } from '../../../../test/helpers/provider-kit.js';
import { createEchoLlm } from './index.js';

describe('echo LLM', () => {
  it('answers with the caller’s last words, word by word', async () => {
    const deltas = await collectDeltas(createEchoLlm(), { messages: [{ role: 'user', content: 'opening hours' }] });
    expect(deltas.length).toBeGreaterThan(1);
    expect(textOf(deltas)).toBe('You said: opening hours');
  });

  it('greets when nobody has spoken, and stops at once when the reply is interrupted', async () => {
    const abort = new AbortController();
    const words: string[] = [];
    for await (const delta of createEchoLlm().complete({ messages: [] }, context(abort.signal))) {
      if (delta.type === 'text') words.push(delta.text);
      abort.abort();
    }
    expect(words).toEqual(['Hello! ']);
  });
});
