import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const KEY_BYTES = 32;

/**
 * HMAC-SHA256 signatures for links this service hands out (recording downloads), so a link works
 * without an API key until it expires and cannot be altered. Its own key, not the sealing key:
 * rotating one must not invalidate the other.
 */
export class UrlSigner {
  constructor(private readonly key: Buffer) {
    if (key.length !== KEY_BYTES) throw new Error('link signing key must be 32 bytes');
  }

  /** Loads `<dataDir>/link-signing.key`, creating it (mode 0600) on first use. */
  static forDataDir(dataDir: string): UrlSigner {
    const path = join(dataDir, 'link-signing.key');
    if (!existsSync(path)) {
      try {
        writeFileSync(path, randomBytes(KEY_BYTES).toString('base64') + '\n', { mode: 0o600, flag: 'wx' });
        chmodSync(path, 0o600);
      } catch (err) {
        // Another app on the same data dir created it first: use theirs.
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      }
    }
    const key = Buffer.from(readFileSync(path, 'utf8').trim(), 'base64');
    if (key.length !== KEY_BYTES) throw new Error(`${path} is not a 32-byte base64 key`);
    return new UrlSigner(key);
  }

  /** base64url signature of `payload`. */
  sign(payload: string): string {
    return createHmac('sha256', this.key).update(payload).digest('base64url');
  }

  /** Constant-time check of a presented signature. */
  verify(payload: string, signature: string): boolean {
    const expected = Buffer.from(this.sign(payload));
    const presented = Buffer.from(signature);
    return presented.length === expected.length && timingSafeEqual(presented, expected);
  }
}
