import { z } from 'zod';
import { isRecord } from '../../../shared/is-record.js';

/**
 * Cartesia TTS WebSocket wire messages (docs/providers.md section 4), as sent by the adapter and
 * checked by the emulator. Objects are loose: the vendor adds fields between API versions, and
 * parsers must ignore what they do not use.
 */

/** The Cartesia-Version this adapter speaks; payloads differ between versions, so it is pinned. */
export const CARTESIA_VERSION = '2025-04-16';

export const CARTESIA_ENCODINGS = ['pcm_f32le', 'pcm_s16le', 'pcm_mulaw', 'pcm_alaw'] as const;
export type CartesiaEncoding = (typeof CARTESIA_ENCODINGS)[number];
export const CARTESIA_SAMPLE_RATES_HZ = [8000, 16000, 22050, 24000, 44100, 48000] as const;

/** The WebSocket supports only the raw container. */
export const outputFormat = z.looseObject({
  container: z.literal('raw'),
  encoding: z.enum(CARTESIA_ENCODINGS),
  sample_rate: z.literal(CARTESIA_SAMPLE_RATES_HZ),
});
export type OutputFormat = z.infer<typeof outputFormat>;

// ---- client → server ----

/** One message of a context: text to speak, a flush, or the end of input (`continue: false`). */
export const generationRequest = z.looseObject({
  context_id: z.string().min(1),
  model_id: z.string().min(1),
  transcript: z.string(),
  voice: z.looseObject({ mode: z.literal('id'), id: z.string().min(1) }),
  output_format: outputFormat,
  language: z.string().min(1).optional(),
  continue: z.boolean().optional(),
  flush: z.boolean().optional(),
  max_buffer_delay_ms: z.number().int().min(0).max(5000).optional(),
  add_timestamps: z.boolean().optional(),
  add_phoneme_timestamps: z.boolean().optional(),
  use_normalized_timestamps: z.boolean().optional(),
  generation_config: z
    .looseObject({ speed: z.number().optional(), volume: z.number().optional(), emotion: z.string().optional() })
    .optional(),
  pronunciation_dict_id: z.string().optional(),
});
export type GenerationRequest = z.infer<typeof generationRequest>;

/** Stops a context's generation (barge-in). */
export const cancelRequest = z.looseObject({ context_id: z.string().min(1), cancel: z.literal(true) });
export type CancelRequest = z.infer<typeof cancelRequest>;

// ---- server → client (the discriminator is `type`) ----

const common = {
  context_id: z.string().optional(),
  status_code: z.number().optional(),
  done: z.boolean().optional(),
};

export const chunkMessage = z.looseObject({
  ...common,
  type: z.literal('chunk'),
  /** Base64 audio in the requested output_format. */
  data: z.string(),
  step_time: z.number().optional(),
  flush_id: z.number().optional(),
});

const optionalOf = (value: unknown, type: 'string' | 'boolean') => value === undefined || typeof value === type;
const optionalNumber = (value: unknown) => value === undefined || (typeof value === 'number' && Number.isFinite(value));

/**
 * The checks of `chunkMessage`, by hand: audio chunks are most of what a talking call's socket
 * receives, and the envelope and message schemas cost more than the rest of their handling. Keep
 * in step with `chunkMessage` (the tests compare them); anything this rejects goes through the
 * schemas, which word the problem.
 */
export function isWellFormedChunk(json: unknown): json is z.infer<typeof chunkMessage> {
  return (
    isRecord(json) &&
    json.type === 'chunk' &&
    typeof json.data === 'string' &&
    optionalOf(json.context_id, 'string') &&
    optionalOf(json.done, 'boolean') &&
    optionalNumber(json.status_code) &&
    optionalNumber(json.step_time) &&
    optionalNumber(json.flush_id)
  );
}

/** Word timings in seconds from the start of the context, as parallel arrays. */
export const timestampsMessage = z.looseObject({
  ...common,
  type: z.literal('timestamps'),
  flush_id: z.number().optional(),
  word_timestamps: z.looseObject({ words: z.array(z.string()), start: z.array(z.number()), end: z.array(z.number()) }),
});

export const phonemeTimestampsMessage = z.looseObject({ ...common, type: z.literal('phoneme_timestamps') });

export const flushDoneMessage = z.looseObject({
  ...common,
  type: z.literal('flush_done'),
  flush_done: z.boolean().optional(),
  flush_id: z.number().optional(),
});

export const doneMessage = z.looseObject({ ...common, type: z.literal('done') });

/**
 * Errors: the 2024-11-13 reference shows `error` as a string; the current SDK has `title`,
 * `message`, `error_code`. Both forms are read.
 */
export const errorMessage = z.looseObject({
  ...common,
  type: z.literal('error'),
  error: z.string().optional(),
  title: z.string().optional(),
  message: z.string().optional(),
  error_code: z.string().optional(),
  doc_url: z.string().optional(),
  request_id: z.string().optional(),
});

export const serverMessage = z.discriminatedUnion('type', [
  chunkMessage,
  timestampsMessage,
  phonemeTimestampsMessage,
  flushDoneMessage,
  doneMessage,
  errorMessage,
]);
export type CartesiaServerMessage = z.infer<typeof serverMessage>;
export type ChunkMessage = z.infer<typeof chunkMessage>;
export type TimestampsMessage = z.infer<typeof timestampsMessage>;
export type FlushDoneMessage = z.infer<typeof flushDoneMessage>;
export type DoneMessage = z.infer<typeof doneMessage>;
export type ErrorMessage = z.infer<typeof errorMessage>;

export const SERVER_MESSAGE_TYPES: ReadonlySet<string> = new Set([
  'chunk',
  'timestamps',
  'phoneme_timestamps',
  'flush_done',
  'done',
  'error',
]);

/** Just enough to route a frame and tell unknown types from malformed known ones. */
export const serverEnvelope = z.looseObject({ type: z.string(), context_id: z.string().optional() });
