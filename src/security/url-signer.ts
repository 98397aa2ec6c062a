import { createHmac, timingSafeEqual } from 'node:crypto';
import { join } from 'node:path';
import { SERVICE_KEY_SOURCES, readOrCreateKeyFile } from './service-keys.js';

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
    return new UrlSigner(readOrCreateKeyFile(join(dataDir, SERVICE_KEY_SOURCES.linkSigning.file)));
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
