import { createHmac } from 'node:crypto';

/** The fixed label the fingerprint signs: only the holder of the key can produce its fingerprint. */
const FINGERPRINT_LABEL = 'switchboard key fingerprint v1';

/**
 * A key's fingerprint: HMAC-SHA256 of a fixed label under the key, hex. Two keys give the same
 * fingerprint only if they are the same key, and the fingerprint tells nothing of the key, so the
 * store may keep it beside the data the key seals.
 */
export function keyFingerprint(key: Buffer): string {
  return createHmac('sha256', key).update(FINGERPRINT_LABEL).digest('hex');
}

/** The first characters of a fingerprint, enough to tell keys apart in a message. */
export function shortFingerprint(fingerprint: string): string {
  return `${fingerprint.slice(0, 12)}…`;
}

/**
 * A node's key is not the one its store was first used with: it would start, answer /healthz and
 * then fail every read of what the other nodes sealed or signed. Start-up stops with this message,
 * one line naming the variable and what to do (cli/main.ts gives it its own exit status).
 */
export class KeyMismatchError extends Error {
  override name = 'KeyMismatchError';
  constructor(
    /** The environment variable that sets the key (named in the message). */
    readonly variable: string,
    message: string,
  ) {
    super(message);
  }
}
