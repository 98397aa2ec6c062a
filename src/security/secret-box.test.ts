import { describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SecretBox, maskSecret } from './secret-box.js';

describe('SecretBox', () => {
  it('round-trips, uses a fresh nonce each time, and rejects tampering', () => {
    const box = new SecretBox(Buffer.alloc(32, 7));
    const a = box.seal('{"openai":"sk-1"}');
    const b = box.seal('{"openai":"sk-1"}');
    expect(a).not.toBe(b);
    expect(box.open(a)).toBe('{"openai":"sk-1"}');
    const raw = Buffer.from(a.slice(3), 'base64');
    raw[raw.length - 1]! ^= 1;
    expect(() => box.open(`v1:${raw.toString('base64')}`)).toThrow();
    expect(() => new SecretBox(Buffer.alloc(32, 8)).open(a)).toThrow();
  });

  it('keeps one key per data dir across loads', () => {
    const dir = mkdtempSync(join(tmpdir(), 'secret-box-'));
    try {
      const sealed = SecretBox.forDataDir(dir).seal('x');
      expect(SecretBox.forDataDir(dir).open(sealed)).toBe('x');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('masks all but the last four characters of long secrets', () => {
    expect(maskSecret('sk-abcdefghijkl')).toBe('****ijkl');
    expect(maskSecret('short')).toBe('****');
  });
});
