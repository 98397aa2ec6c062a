import { randomBytes } from 'node:crypto';

/**
 * Twilio-shaped identifiers: a two-letter type prefix and 32 lowercase hex digits. Servers often
 * check the prefix (CA = call, MZ = media stream, AC = account), so the fakes must look real.
 */
export function twilioSid(prefix: 'CA' | 'MZ' | 'AC'): string {
  return prefix + randomBytes(16).toString('hex');
}
