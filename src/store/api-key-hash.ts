import { createHash, randomBytes } from 'node:crypto';

/** API keys are 32 random bytes, so a plain sha256 is a sufficient one-way handle for lookup. */
export function hashApiKey(key: string): string {
  return createHash('sha256').update(key, 'utf8').digest('hex');
}

export function generateApiKey(): string {
  return `sb_${randomBytes(32).toString('base64url')}`;
}

export function apiKeyPrefix(key: string): string {
  return key.slice(0, 8);
}
