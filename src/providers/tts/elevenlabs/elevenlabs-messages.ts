import { z } from 'zod';

/**
 * ElevenLabs multi-context TTS websocket (`multi-stream-input`, docs/providers.md section 5b) wire
 * messages, as sent by the adapter and checked by the emulator. Objects are loose: the vendor
 * adds fields, and parsers must ignore what they do not use.
 */

/** 8 kHz G.711 mu-law, headerless: what the phone leg carries. */
export const ULAW_8000 = 'ulaw_8000';

// ---- client → server ----

/** Only allowed in a context's first message; later ones leave it out or repeat it unchanged. */
export const voiceSettings = z.looseObject({
  stability: z.number().min(0).max(1).optional(),
  similarity_boost: z.number().min(0).max(1).optional(),
  style: z.number().min(0).max(1).optional(),
  use_speaker_boost: z.boolean().optional(),
  speed: z.number().positive().optional(),
});

export const generationConfig = z.looseObject({ chunk_length_schedule: z.array(z.number().positive()).optional() });

export const pronunciationDictionaryLocator = z.looseObject({
  pronunciation_dictionary_id: z.string().min(1),
  version_id: z.string().optional(),
});

/**
 * Every client message has this shape: initialise a context (`text: " "` plus settings), send
 * text, flush, close a context, keep it alive (`text: ""`) or close the socket.
 */
export const clientMessage = z
  .looseObject({
    text: z.string().optional(),
    context_id: z.string().min(1).optional(),
    voice_settings: voiceSettings.optional(),
    generation_config: generationConfig.optional(),
    pronunciation_dictionary_locators: z.array(pronunciationDictionaryLocator).optional(),
    flush: z.boolean().optional(),
    close_context: z.boolean().optional(),
    close_socket: z.boolean().optional(),
    try_trigger_generation: z.boolean().optional(),
    /** The key, when it is not in the xi-api-key header; both spellings occur in the vendor's specs. */
    xi_api_key: z.string().optional(),
    'xi-api-key': z.string().optional(),
  })
  .refine((m) => m.text !== undefined || m.flush === true || m.close_context === true || m.close_socket === true, {
    message: 'a message needs text, flush, close_context or close_socket',
  });
export type ClientMessage = z.infer<typeof clientMessage>;

// ---- server → client ----

/** Character timings in ms, relative to the chunk that carries them. */
export const alignment = z.looseObject({
  chars: z.array(z.string()),
  charStartTimesMs: z.array(z.number()),
  charDurationsMs: z.array(z.number()),
});
export type Alignment = z.infer<typeof alignment>;

/**
 * Audio (`audio` base64, with alignments), the end of a context (`isFinal: true`), or an error
 * (`error`, with `message` and a `code`). The spec names the context `contextId`; the server has
 * been seen sending `context_id` too, so both are read.
 */
export const serverMessage = z.looseObject({
  audio: z.string().nullish(),
  isFinal: z.boolean().nullish(),
  alignment: alignment.nullish(),
  normalizedAlignment: alignment.nullish(),
  contextId: z.string().nullish(),
  context_id: z.string().nullish(),
  error: z.union([z.string(), z.looseObject({ message: z.string().optional() })]).nullish(),
  message: z.string().nullish(),
  code: z.union([z.number(), z.string()]).nullish(),
  type: z.string().nullish(),
});
export type ElevenLabsServerMessage = z.infer<typeof serverMessage>;
