import { describe, expect, it } from 'vitest';
import { ByteLog } from './byte-log.js';

describe('ByteLog', () => {
  it('keeps what was appended, in order, past its first capacity, and copies what it was lent', () => {
    const log = new ByteLog(4);
    const lent = Uint8Array.of(1, 2, 3);
    log.append(lent);
    lent.fill(9);
    log.append(Uint8Array.of(4, 5, 6, 7), 2);
    log.append(Uint8Array.of(6, 7, 8));
    expect([...log.view()]).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    expect(log.length).toBe(8);
  });

  it('starts again empty after clear()', () => {
    const log = new ByteLog(2);
    log.append(Uint8Array.of(1, 2, 3));
    log.clear();
    expect(log.length).toBe(0);
    log.append(Uint8Array.of(7));
    expect([...log.view()]).toEqual([7]);
  });
});
