import { describe, expect, it } from 'vitest';
import { chunkMessage, isWellFormedChunk } from './cartesia-messages.js';

const good = { type: 'chunk', context_id: 'c1', status_code: 206, done: false, data: 'f39/fw==', step_time: 12.5 };

/** Messages on both sides of every rule of chunkMessage. */
const cases: unknown[] = [
  good,
  { type: 'chunk', data: '' },
  { ...good, extra: { any: 1 } },
  { ...good, flush_id: 2 },
  { ...good, flush_id: '2' },
  { ...good, data: 5 },
  { type: 'chunk' },
  { ...good, type: 'done' },
  { ...good, context_id: 7 },
  { ...good, context_id: null },
  { ...good, status_code: '206' },
  { ...good, status_code: Number.POSITIVE_INFINITY },
  { ...good, step_time: Number.NaN },
  { ...good, done: 'false' },
  JSON.parse('{"type":"chunk","data":"","step_time":1e999}'),
  null,
  [good],
  'chunk',
];

describe('isWellFormedChunk', () => {
  it('accepts exactly what the chunkMessage schema accepts', () => {
    for (const message of cases)
      expect({ message, ok: isWellFormedChunk(message) }).toEqual({
        message,
        ok: chunkMessage.safeParse(message).success,
      });
    expect(cases.filter(isWellFormedChunk).length).toBe(4);
  });
});
