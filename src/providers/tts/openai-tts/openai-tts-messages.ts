import { z } from 'zod';

/**
 * OpenAI's speech endpoint, `POST /v1/audio/speech` (OpenAI's public API reference), as the adapter
 * sends it and the emulator checks it. The answer is the audio itself (no JSON), or an error body
 * in OpenAI's `{error:{message,type}}` shape.
 */

export const SPEECH_PATH = '/v1/audio/speech';

export const speechRequest = z.looseObject({
  model: z.string().min(1),
  input: z.string().min(1).max(4096),
  voice: z.union([z.string().min(1), z.looseObject({ id: z.string().min(1) })]),
  /** `pcm` is raw 24 kHz 16-bit little-endian mono, what the adapter asks for. */
  response_format: z.enum(['mp3', 'opus', 'aac', 'flac', 'wav', 'pcm']).optional(),
  speed: z.number().min(0.25).max(4).optional(),
  instructions: z.string().max(4096).optional(),
  stream_format: z.enum(['audio', 'sse']).optional(),
});
export type SpeechRequest = z.infer<typeof speechRequest>;
