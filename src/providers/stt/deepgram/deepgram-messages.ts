import { z } from 'zod';

/**
 * Deepgram live transcription (`/v1/listen`) wire messages (docs/providers.md section 1), as read by
 * the adapter and produced and checked by the emulator. Objects are loose: Deepgram adds fields
 * over time, and parsers must ignore what they do not use.
 */

// ---- client → server (JSON text frames; audio goes in binary frames) ----

export const keepAliveMessage = z.looseObject({ type: z.literal('KeepAlive') });
export const finalizeMessage = z.looseObject({
  type: z.literal('Finalize'),
  channel: z.number().int().min(0).optional(),
});
export const closeStreamMessage = z.looseObject({ type: z.literal('CloseStream') });

export const listenClientMessage = z.discriminatedUnion('type', [
  keepAliveMessage,
  finalizeMessage,
  closeStreamMessage,
]);
export type ListenClientMessage = z.infer<typeof listenClientMessage>;

/** Control frames the adapter sends, serialised once: they go out every few seconds per call. */
export const KEEP_ALIVE_FRAME = JSON.stringify({ type: 'KeepAlive' } satisfies ListenClientMessage);
export const FINALIZE_FRAME = JSON.stringify({ type: 'Finalize' } satisfies ListenClientMessage);
export const CLOSE_STREAM_FRAME = JSON.stringify({ type: 'CloseStream' } satisfies ListenClientMessage);

// ---- server → client (JSON text frames; the discriminator is `type`) ----

export const word = z.looseObject({
  word: z.string(),
  /** Seconds from the start of the stream's audio. */
  start: z.number(),
  end: z.number(),
  confidence: z.number(),
  punctuated_word: z.string().optional(),
  speaker: z.number().optional(),
  language: z.string().optional(),
});

export const alternative = z.looseObject({
  transcript: z.string(),
  confidence: z.number().optional(),
  languages: z.array(z.string()).optional(),
  words: z.array(word).optional(),
});

export const resultsMessage = z.looseObject({
  type: z.literal('Results'),
  /** `[channel, total channels]`. */
  channel_index: z.array(z.number()).optional(),
  /** Seconds of the stream's audio this result covers, from `start`. */
  start: z.number().optional(),
  duration: z.number().optional(),
  is_final: z.boolean().optional(),
  speech_final: z.boolean().optional(),
  from_finalize: z.boolean().optional(),
  channel: z.looseObject({ alternatives: z.array(alternative) }),
  metadata: z
    .looseObject({
      request_id: z.string().optional(),
      model_uuid: z.string().optional(),
      model_info: z
        .looseObject({ name: z.string().optional(), version: z.string().optional(), arch: z.string().optional() })
        .optional(),
    })
    .optional(),
});
export type ResultsMessage = z.infer<typeof resultsMessage>;

/** Needs `vad_events=true`. `timestamp` is seconds from the start of the stream's audio. */
export const speechStartedMessage = z.looseObject({
  type: z.literal('SpeechStarted'),
  channel: z.array(z.number()).optional(),
  timestamp: z.number().optional(),
});
export type SpeechStartedMessage = z.infer<typeof speechStartedMessage>;

/** Needs `utterance_end_ms` and `interim_results=true`. */
export const utteranceEndMessage = z.looseObject({
  type: z.literal('UtteranceEnd'),
  channel: z.array(z.number()).optional(),
  last_word_end: z.number().optional(),
});
export type UtteranceEndMessage = z.infer<typeof utteranceEndMessage>;

/** Sent in reply to CloseStream, just before the server closes. */
export const listenMetadataMessage = z.looseObject({
  type: z.literal('Metadata'),
  transaction_key: z.string().optional(),
  request_id: z.string().optional(),
  sha256: z.string().optional(),
  created: z.string().optional(),
  duration: z.number().optional(),
  channels: z.number().optional(),
});
export type ListenMetadataMessage = z.infer<typeof listenMetadataMessage>;

export const listenServerMessage = z.discriminatedUnion('type', [
  resultsMessage,
  speechStartedMessage,
  utteranceEndMessage,
  listenMetadataMessage,
]);
export type ListenServerMessage = z.infer<typeof listenServerMessage>;

export const LISTEN_SERVER_MESSAGE_TYPES: ReadonlySet<string> = new Set([
  'Results',
  'SpeechStarted',
  'UtteranceEnd',
  'Metadata',
]);

/** Just the discriminator, to tell an unknown message type from a malformed known one. */
export const messageEnvelope = z.looseObject({ type: z.string() });

/** Close reasons Deepgram puts in the close frame after the upgrade. */
export const CLOSE_REASONS = {
  /** 1008: the payload cannot be decoded as audio. */
  badAudio: 'DATA-0000',
  /** 1011: Deepgram sent no text frame within its timeout window. */
  serverTimeout: 'NET-0000',
  /** 1011: neither audio nor a KeepAlive arrived for 10 s. */
  clientIdle: 'NET-0001',
} as const;
