import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { join } from 'node:path';
import type { SecretKeyRing } from './secret-key-ring.js';
import { SERVICE_KEY_SOURCES, readOrCreateKeyFile } from './service-keys.js';

const KEY_BYTES = 32;
const IV_BYTES = 12;
const TAG_BYTES = 16;
const VERSION = 'v1';

/**
 * A sealed value that none of this node's secret keys opens: it was sealed with a key the node
 * does not hold (rotated away, or the node was given another key). Callers name what it belongs to.
 */
export class SealedSecretError extends Error {
  override name = 'SealedSecretError';
}

type Keys = Pick<SecretKeyRing, 'sealing' | 'readable'>;

/**
 * AES-256-GCM sealing for provider keys at rest. The key never sits beside what it seals (see
 * service-keys.ts). Given a key ring, it seals with the ring's sealing key and opens with any of
 * its keys, which is what lets a rotation re-seal under live nodes (secret-key-ring.ts).
 */
export class SecretBox {
  private readonly keys: Keys;

  constructor(keys: Buffer | Keys) {
    if (Buffer.isBuffer(keys)) {
      if (keys.length !== KEY_BYTES) throw new Error('secret key must be 32 bytes');
      this.keys = { sealing: () => keys, readable: () => [keys] };
    } else this.keys = keys;
  }

  /** Loads `<dataDir>/secret.key`, creating it (mode 0600) on first start. */
  static forDataDir(dataDir: string): SecretBox {
    return new SecretBox(readOrCreateKeyFile(join(dataDir, SERVICE_KEY_SOURCES.secret.file)));
  }

  seal(plaintext: string): string {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.keys.sealing(), iv);
    const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return `${VERSION}:${Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64')}`;
  }

  /** The plaintext; a SealedSecretError when no key of this node opens it. */
  open(sealed: string): string {
    const [version, payload] = sealed.split(':', 2);
    if (version !== VERSION || payload === undefined) throw new SealedSecretError('unknown sealed secret format');
    const raw = Buffer.from(payload, 'base64');
    for (const key of this.keys.readable()) {
      const opened = openWith(key, raw);
      if (opened !== undefined) return opened;
    }
    throw new SealedSecretError('sealed with a secret key this server does not hold');
  }

  /** Whether `sealed` is sealed with the key this box seals with (a rotation re-seals the rest). */
  isSealedWithCurrentKey(sealed: string): boolean {
    const payload = sealed.startsWith(`${VERSION}:`) ? sealed.slice(VERSION.length + 1) : undefined;
    return payload !== undefined && openWith(this.keys.sealing(), Buffer.from(payload, 'base64')) !== undefined;
  }
}

/** The plaintext, or undefined when `key` is not the key that sealed it (GCM's tag does not match). */
function openWith(key: Buffer, raw: Buffer): string | undefined {
  if (raw.length < IV_BYTES + TAG_BYTES) return undefined;
  try {
    const decipher = createDecipheriv('aes-256-gcm', key, raw.subarray(0, IV_BYTES));
    decipher.setAuthTag(raw.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
    return Buffer.concat([decipher.update(raw.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString('utf8');
  } catch {
    return undefined;
  }
}

/** What a stored provider key looks like when read back: enough to recognise it, not to use it. */
export function maskSecret(secret: string): string {
  return secret.length >= 12 ? `****${secret.slice(-4)}` : '****';
}
