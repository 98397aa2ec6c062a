import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { RoomTokens } from './room-tokens.js';

describe('RoomTokens', () => {
  const key = Buffer.alloc(32, 5);
  let nowMs = 1_700_000_000_000;
  const tokens = new RoomTokens(key, () => nowMs);
  const inOneHour = nowMs / 1000 + 3600;

  it('verifies its own token for its room until it expires', () => {
    const token = tokens.issue('room-a', inOneHour);
    expect(tokens.verify(token, 'room-a')).toEqual({ ok: true, claims: { room: 'room-a', expiresAtSecs: inOneHour } });
    expect(tokens.verify(token, 'room-b')).toMatchObject({ ok: false, why: 'wrong-room' });
    nowMs += 3600 * 1000;
    expect(tokens.verify(token, 'room-a')).toMatchObject({ ok: false, why: 'expired' });
    nowMs -= 3600 * 1000;
  });

  it('trusts nothing unsigned: a changed payload, another key, or garbage', () => {
    const token = tokens.issue('room-a', inOneHour);
    const [v, , sig] = token.split('.');
    const forged = `${v}.${Buffer.from(JSON.stringify({ r: 'room-a', exp: inOneHour + 99_999 })).toString('base64url')}.${sig}`;
    expect(tokens.verify(forged, 'room-a')).toMatchObject({ ok: false, why: 'bad-signature' });
    expect(new RoomTokens(Buffer.alloc(32, 6)).verify(token, 'room-a')).toMatchObject({
      ok: false,
      why: 'bad-signature',
    });
    for (const garbage of [undefined, '', 'abc', 'v2.a.b', 'v1..', 'v1.a.b.c'])
      expect(tokens.verify(garbage, 'room-a')).toMatchObject({
        ok: false,
        why: expect.stringMatching(/malformed|bad-signature/),
      });
  });

  it('keeps its key in the data dir (0600) so tokens survive a restart', () => {
    const dir = mkdtempSync(join(tmpdir(), 'room-tokens-'));
    try {
      const token = RoomTokens.forDataDir(dir).issue('r', Math.floor(Date.now() / 1000) + 60);
      expect(statSync(join(dir, 'room-token.key')).mode & 0o777).toBe(0o600);
      expect(RoomTokens.forDataDir(dir).verify(token, 'r').ok).toBe(true);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
