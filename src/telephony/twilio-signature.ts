import { createRequire } from 'node:module';
import type twilioWebhooksModule from 'twilio/lib/webhooks/webhooks.js';

type TwilioWebhooks = typeof twilioWebhooksModule;
let webhooksModule: TwilioWebhooks | undefined;

/**
 * The carrier's signature helpers, loaded on first use (a few ms, once): the twilio package costs
 * megabytes of memory that a server which never checks a signature should not pay.
 */
function twilioWebhooks(): TwilioWebhooks {
  webhooksModule ??= createRequire(import.meta.url)('twilio/lib/webhooks/webhooks.js') as TwilioWebhooks;
  return webhooksModule;
}

/**
 * Checks X-Twilio-Signature with the official library, which also tries the URL with and without
 * the default port because the carrier signs inconsistently. `url` must be the address the carrier
 * requested: our public URL plus the path and query, not what a proxy forwarded to us.
 */
export function isValidTwilioSignature(
  authToken: string,
  signature: string | undefined,
  url: string,
  params: Record<string, unknown>,
): boolean {
  if (!signature) return false;
  return twilioWebhooks().validateRequest(authToken, signature, url, params);
}

/** For tests and the phone simulator, which play the carrier's part. */
export function twilioSignatureFor(authToken: string, url: string, params: Record<string, unknown>): string {
  return twilioWebhooks().getExpectedTwilioSignature(authToken, url, params);
}
