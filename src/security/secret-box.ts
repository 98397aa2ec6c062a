import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const KEY_BYTES = 32;
const IV_BYTES = 12;
const TAG_BYTES = 16;
const VERSION = 'v1';

/** AES-256-GCM sealing for provider keys at rest. The key lives in the data dir, not the database. */
export class SecretBox {
  constructor(private readonly key: Buffer) {
    if (key.length !== KEY_BYTES) throw new Error('secret key must be 32 bytes');
  }

  /** Loads `<dataDir>/secret.key`, creating it (mode 0600) on first start. */
  static forDataDir(dataDir: string): SecretBox {
    const path = join(dataDir, 'secret.key');
    if (!existsSync(path)) {
      writeFileSync(path, randomBytes(KEY_BYTES).toString('base64') + '\n', { mode: 0o600, flag: 'wx' });
      chmodSync(path, 0o600);
    }
    const key = Buffer.from(readFileSync(path, 'utf8').trim(), 'base64');
    if (key.length !== KEY_BYTES) throw new Error(`${path} is not a 32-byte base64 key`);
    return new SecretBox(key);
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
