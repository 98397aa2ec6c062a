import type { RawData } from 'ws';
import { type OutboundMessage, outboundMessage } from '../../telephony/twilio-messages.js';
import type { ViolationKind } from './call-report.js';

export type CheckedMessage =
  | { ok: true; message: OutboundMessage }
  | { ok: false; kind: ViolationKind; detail: string };

/** How much of a bad message the report quotes. */
const QUOTE_CHARS = 120;

/**
 * Classifies one WebSocket message from the bot the way Twilio judges it: JSON text only, one
 * of media/mark/clear, exactly the documented fields (the schemas in twilio-messages.ts), and
 * addressed to this stream. Anything else is a violation, which the carrier ignores.
 */
export function checkServerMessage(data: RawData, isBinary: boolean, streamSid: string): CheckedMessage {
  const bytes = Array.isArray(data) ? Buffer.concat(data) : Buffer.isBuffer(data) ? data : Buffer.from(data);
  if (isBinary) return { ok: false, kind: 'binary-frame', detail: `${bytes.length} bytes` };
  let json: unknown;
  try {
    json = JSON.parse(bytes.toString('utf8'));
  } catch {
    return { ok: false, kind: 'invalid-json', detail: bytes.toString('utf8', 0, QUOTE_CHARS) };
  }
  const eventName = (json as { event?: unknown } | null)?.event;
  if (eventName !== 'media' && eventName !== 'mark' && eventName !== 'clear') {
    return {
      ok: false,
      kind: 'unknown-event',
      detail: typeof eventName === 'string' ? eventName.slice(0, 60) : 'no event field',
    };
  }
  const parsed = outboundMessage.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue ? `${issue.path.join('.') || '(root)'} ${issue.message}` : 'invalid';
    return { ok: false, kind: 'invalid-message', detail: `${eventName}: ${where}` };
  }
  if (parsed.data.streamSid !== streamSid) {
    return { ok: false, kind: 'wrong-stream-sid', detail: `${eventName} for ${parsed.data.streamSid.slice(0, 40)}` };
  }
  return { ok: true, message: parsed.data };
}
