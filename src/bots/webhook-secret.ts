import { randomBytes } from 'node:crypto';

/** A new webhook signing secret: 32 random bytes, base64url, with a prefix that says what it is. */
export function generateWebhookSecret(): string {
  return `whsec_${randomBytes(32).toString('base64url')}`;
}
