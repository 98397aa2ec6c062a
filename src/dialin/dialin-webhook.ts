import type { Logger } from 'pino';
import type { AddressPolicy } from '../security/address-policy.js';
import { pinlessSignature, postJson } from '../security/webhook-client.js';

export interface DialinWebhookBody {
  From: string;
  To: string;
  callId: string;
  callDomain: string;
}

/** Waits between delivery attempts; the hold timeout bounds the whole. */
const RETRY_DELAYS_MS = [500, 1000, 2000, 4000, 8000];
const ATTEMPT_TIMEOUT_MS = 5000;

/**
 * Tells the customer's room_creation_api that a call is waiting, signed like pinless dial-in
 * (X-Pinless-Timestamp, X-Pinless-Signature). A 2xx is success; anything else is retried with
 * backoff until `deadlineMs` (performance.now() time) or until `stillWaiting` says the call has
 * been answered or has hung up.
 */
export async function deliverDialinWebhook(options: {
  url: string;
  secretBase64: string;
  body: DialinWebhookBody;
  deadlineMs: number;
  policy: AddressPolicy;
  log: Logger;
  stillWaiting: () => boolean;
}): Promise<boolean> {
  const raw = JSON.stringify(options.body);
  for (let attempt = 0; ; attempt++) {
    if (!options.stillWaiting()) return false;
    const timestamp = String(Math.floor(Date.now() / 1000));
    try {
      const result = await postJson(
        options.url,
        raw,
        {
          'x-pinless-timestamp': timestamp,
          'x-pinless-signature': pinlessSignature(options.secretBase64, timestamp, raw),
        },
        {
          policy: options.policy,
          timeoutMs: Math.max(100, Math.min(ATTEMPT_TIMEOUT_MS, options.deadlineMs - performance.now())),
        },
      );
      if (result.status >= 200 && result.status < 300) {
        options.log.info(
          { url: options.url, status: result.status, attempt: attempt + 1 },
          'dial-in webhook delivered',
        );
        return true;
      }
      options.log.warn({ url: options.url, status: result.status, attempt: attempt + 1 }, 'dial-in webhook refused');
    } catch (err) {
      options.log.warn(
        { url: options.url, attempt: attempt + 1, error: err instanceof Error ? err.message : String(err) },
        'dial-in webhook failed',
      );
    }
    const delayMs = RETRY_DELAYS_MS[Math.min(attempt, RETRY_DELAYS_MS.length - 1)]!;
    if (performance.now() + delayMs >= options.deadlineMs) return false;
    await new Promise((resolve) => setTimeout(resolve, delayMs));
  }
}
