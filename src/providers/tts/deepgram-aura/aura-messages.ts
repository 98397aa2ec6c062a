import { z } from 'zod';

/**
 * Deepgram Aura text-to-speech websocket (`/v1/speak`) wire messages (docs/providers.md section 6b), as
 * sent by the adapter and checked by the emulator. Audio travels in binary frames, raw in the
 * encoding asked for in the query. Objects are loose: parsers ignore fields they do not use.
 */

/** The socket speaks raw audio only, in one of these. */
export const AURA_ENCODINGS = ['linear16', 'mulaw', 'alaw'] as const;
export type AuraEncoding = (typeof AURA_ENCODINGS)[number];
export const AURA_SAMPLE_RATES_HZ = [8000, 16000, 24000, 32000, 48000] as const;
/** What the socket produces when the query names no encoding or rate. */
export const AURA_DEFAULT_ENCODING: AuraEncoding = 'linear16';
export const AURA_DEFAULT_SAMPLE_RATE_HZ = 24000;

/** Deepgram accepts at most this many Flush messages per window; later ones get a Warning and are ignored. */
export const AURA_FLUSH_LIMIT = { count: 20, windowMs: 60_000 } as const;

// ---- client → server (JSON text frames) ----

/** Text to speak; buffered by the server until a Flush (or enough text) arrives. */
export const speakMessage = z.looseObject({ type: z.literal('Speak'), text: z.string() });
/** Speak what is buffered now; answered by Flushed once its audio has been sent. */
export const flushMessage = z.looseObject({ type: z.literal('Flush') });
/** Drop the buffered text and audio (barge-in); answered by Cleared. */
export const clearMessage = z.looseObject({ type: z.literal('Clear') });
/** Close the connection at once (status 1000). */
export const closeMessage = z.looseObject({ type: z.literal('Close') });

export const speakClientMessage = z.discriminatedUnion('type', [
  speakMessage,
  flushMessage,
  clearMessage,
  closeMessage,
]);
export type SpeakClientMessage = z.infer<typeof speakClientMessage>;

export const FLUSH_FRAME = JSON.stringify({ type: 'Flush' } satisfies SpeakClientMessage);
export const CLEAR_FRAME = JSON.stringify({ type: 'Clear' } satisfies SpeakClientMessage);
export const CLOSE_FRAME = JSON.stringify({ type: 'Close' } satisfies SpeakClientMessage);

// ---- server → client (JSON text frames; the discriminator is `type`) ----

export const speakMetadataMessage = z.looseObject({
  type: z.literal('Metadata'),
  request_id: z.string().optional(),
  model_name: z.string().optional(),
  model_version: z.string().optional(),
  model_uuid: z.string().optional(),
  additional_model_uuids: z.array(z.string()).optional(),
});
export type SpeakMetadataMessage = z.infer<typeof speakMetadataMessage>;

export const flushedMessage = z.looseObject({ type: z.literal('Flushed'), sequence_id: z.number().optional() });
export type FlushedMessage = z.infer<typeof flushedMessage>;

export const clearedMessage = z.looseObject({ type: z.literal('Cleared'), sequence_id: z.number().optional() });
export type ClearedMessage = z.infer<typeof clearedMessage>;

export const warningMessage = z.looseObject({
  type: z.literal('Warning'),
  description: z.string().optional(),
  code: z.string().optional(),
});
export type WarningMessage = z.infer<typeof warningMessage>;

export const speakServerMessage = z.discriminatedUnion('type', [
  speakMetadataMessage,
  flushedMessage,
  clearedMessage,
  warningMessage,
]);
export type SpeakServerMessage = z.infer<typeof speakServerMessage>;

/** Just the discriminator, to tell an unknown message type from a malformed known one. */
export const messageEnvelope = z.looseObject({ type: z.string() });

export const SPEAK_SERVER_MESSAGE_TYPES: ReadonlySet<string> = new Set(['Metadata', 'Flushed', 'Cleared', 'Warning']);
