/**
 * The few Twilio REST calls the media runtime needs. The base URL is overridable
 * (SWITCHBOARD_TWILIO_URL) so tests and the sandbox can point it at a fake.
 */
export interface TwilioCredentials {
  accountSid: string;
  authToken: string;
  baseUrl?: string;
}

const DEFAULT_BASE_URL = 'https://api.twilio.com';
const TIMEOUT_MS = 5000;

/** Ends a live call. A 404 (code 20404) means it has already ended, which is fine. */
export async function hangupCall(credentials: TwilioCredentials, callSid: string): Promise<void> {
  const base = (credentials.baseUrl ?? DEFAULT_BASE_URL).replace(/\/+$/, '');
  const url = `${base}/2010-04-01/Accounts/${encodeURIComponent(credentials.accountSid)}/Calls/${encodeURIComponent(callSid)}.json`;
  const response = await fetch(url, {
    method: 'POST',
    headers: {
      authorization: `Basic ${Buffer.from(`${credentials.accountSid}:${credentials.authToken}`).toString('base64')}`,
      'content-type': 'application/x-www-form-urlencoded',
    },
    body: new URLSearchParams({ Status: 'completed' }).toString(),
    signal: AbortSignal.timeout(TIMEOUT_MS),
  });
  if (response.ok || response.status === 404) {
    await response.body?.cancel();
    return;
  }
  const text = await response.text().catch(() => '');
  throw new Error(`twilio hang-up failed with HTTP ${response.status}: ${text.slice(0, 200)}`);
}
