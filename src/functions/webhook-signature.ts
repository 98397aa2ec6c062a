import { createHmac, timingSafeEqual } from 'node:crypto';

export { generateWebhookSecret } from '../bots/webhook-secret.js';

/**
 * Webhook tool requests are signed so a receiver can tell they come from this service:
 *
 *   X-Switchboard-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256>
 *
 * The HMAC's key is the configuration's `webhook_secret` (its UTF-8 bytes) and its message is
 * `<t>.<payload>`, where the payload is the request body for POST and the path with its query for
 * GET. The timestamp is inside the signed text, so a receiver can refuse old requests (replays).
 */
export const SIGNATURE_HEADER = 'x-switchboard-signature';

export function webhookSignature(secret: string, timestampSecs: number, payload: string): string {
  const mac = createHmac('sha256', secret).update(`${timestampSecs}.${payload}`).digest('hex');
  return `t=${timestampSecs},v1=${mac}`;
}

/**
 * A receiver's check (used by the tests and the example receiver): the header is well formed, its
 * HMAC matches and its time is within `toleranceSecs` of `nowSecs`.
 */
export function verifyWebhookSignature(
  secret: string,
  header: string | undefined,
  payload: string,
  options: { nowSecs?: number; toleranceSecs?: number } = {},
): boolean {
  const match = header ? /^t=(\d+),v1=([0-9a-f]{64})$/.exec(header) : null;
  if (!match) return false;
  const timestampSecs = Number(match[1]);
  const now = options.nowSecs ?? Math.floor(Date.now() / 1000);
  if (Math.abs(now - timestampSecs) > (options.toleranceSecs ?? 300)) return false;
  const expected = Buffer.from(webhookSignature(secret, timestampSecs, payload).split('v1=')[1]!, 'hex');
  return timingSafeEqual(expected, Buffer.from(match[2]!, 'hex'));
}
