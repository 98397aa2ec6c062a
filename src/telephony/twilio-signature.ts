import twilioWebhooks from 'twilio/lib/webhooks/webhooks.js';

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
  return twilioWebhooks.validateRequest(authToken, signature, url, params);
}

/** For tests and the phone simulator, which play the carrier's part. */
export function twilioSignatureFor(authToken: string, url: string, params: Record<string, unknown>): string {
  return twilioWebhooks.getExpectedTwilioSignature(authToken, url, params);
}
