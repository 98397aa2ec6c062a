import { describe, expect, it } from 'vitest';
import { HeldFrames } from './call-lifecycle.js';

describe('HeldFrames', () => {
  it('keeps copies of lent frames (the transport may reuse its buffer), up to its limit, oldest first', () => {
    const held = new HeldFrames(2);
    const lent = new Uint8Array(160).fill(1);
    held.hold(lent);
    lent.fill(2);
    held.hold(lent);
    lent.fill(3);
    held.hold(lent); // over the limit: dropped
    const released: number[] = [];
    held.release((frame) => released.push(frame[0]!));
    expect(released).toEqual([1, 2]);
    held.release((frame) => released.push(frame[0]!));
    expect(released).toEqual([1, 2]);
  });
});
