import { describe, expect, it } from 'vitest';
import { ProviderError } from '../providers/types.js';
import { RETRY_DELAYS_MS, ReplayableText, mayRetry } from './retry.js';

async function* pieces(texts: string[], failAfter?: number): AsyncGenerator<string> {
  for (const [i, text] of texts.entries()) {
    if (i === failAfter) throw new Error('the model failed');
    yield text;
  }
}

async function readAll(iterable: AsyncIterable<string>): Promise<string[]> {
  const out: string[] = [];
  for await (const text of iterable) out.push(text);
  return out;
}

describe('ReplayableText', () => {
  it('replays what an abandoned reader took, then carries on from the source', async () => {
    const text = new ReplayableText(pieces(['One. ', 'Two. ', 'Three.']));
    const first = text.reader();
    expect((await first.next()).value).toBe('One. ');
    await first.return(undefined);
    expect(await readAll(text.reader())).toEqual(['One. ', 'Two. ', 'Three.']);
  });

  it('hands the source’s error to every reader that gets that far, and never leaves it unhandled', async () => {
    const text = new ReplayableText(pieces(['One. ', 'Two. '], 1));
    const first = text.reader();
    expect((await first.next()).value).toBe('One. ');
    await expect(first.next()).rejects.toThrow('the model failed');
    const second = text.reader();
    expect((await second.next()).value).toBe('One. ');
    await expect(second.next()).rejects.toThrow('the model failed');
  });
});

describe('mayRetry', () => {
  const live = new AbortController().signal;

  it('retries retryable provider errors a bounded number of times', () => {
    const dropped = new ProviderError('deepgram', 'connection dropped', true);
    expect(mayRetry(dropped, 0, live)).toBe(true);
    expect(mayRetry(dropped, RETRY_DELAYS_MS.length - 1, live)).toBe(true);
    expect(mayRetry(dropped, RETRY_DELAYS_MS.length, live)).toBe(false);
  });

  it('does not retry refusals, plain errors or a cancelled request', () => {
    expect(mayRetry(new ProviderError('openai', 'HTTP 401', false), 0, live)).toBe(false);
    expect(mayRetry(new Error('bug'), 0, live)).toBe(false);
    const aborted = new AbortController();
    aborted.abort();
    expect(mayRetry(new ProviderError('openai', 'HTTP 503', true), 0, aborted.signal)).toBe(false);
  });
});
