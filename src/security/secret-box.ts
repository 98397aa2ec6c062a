import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { SERVICE_KEY_SOURCES, readOrCreateKeyFile } from './service-keys.js';

const KEY_BYTES = 32;
const IV_BYTES = 12;
const TAG_BYTES = 16;
const VERSION = 'v1';

/** AES-256-GCM sealing for provider keys at rest. The key never sits beside what it seals (see service-keys.ts). */
export class SecretBox {
  constructor(private readonly key: Buffer) {
    if (key.length !== KEY_BYTES) throw new Error('secret key must be 32 bytes');
  }

  /** Loads `<dataDir>/secret.key`, creating it (mode 0600) on first start. */
  static forDataDir(dataDir: string): SecretBox {
    return new SecretBox(readOrCreateKeyFile(join(dataDir, SERVICE_KEY_SOURCES.secret.file)));
  }

  seal(plaintext: string): string {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return `${VERSION}:${Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64')}`;
  }

  open(sealed: string): string {
    const [version, payload] = sealed.split(':', 2);
    if (version !== VERSION || payload === undefined) throw new Error('unknown sealed secret format');
    const raw = Buffer.from(payload, 'base64');
    const decipher = createDecipheriv('aes-256-gcm', this.key, raw.subarray(0, IV_BYTES));
    decipher.setAuthTag(raw.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
    return Buffer.concat([decipher.update(raw.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString('utf8');
  }
}

/** What a stored provider key looks like when read back: enough to recognise it, not to use it. */
export function maskSecret(secret: string): string {
  return secret.length >= 12 ? `****${secret.slice(-4)}` : '****';
}
