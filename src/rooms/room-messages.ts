import { z } from 'zod';

/**
 * The room websocket's messages, in the RTVI vocabulary (label "rtvi-ai"). How they are framed is
 * the wire's business (room-wire.ts): JSON text and bare PCM for the page, protobuf frames for
 * Pipecat's websocket transport (pipecat-wire.ts).
 */
export const RTVI_LABEL = 'rtvi-ai';
/** What bot-ready announces; the RTVI protocol version these messages follow. */
export const RTVI_PROTOCOL_VERSION = '1.0.0';

/** Browser capture rates the room accepts (resampled to the pipeline's 8 kHz). */
export const CLIENT_SAMPLE_RATES_HZ = [8000, 16000, 24000, 44100, 48000] as const;

const envelope = {
  label: z.literal(RTVI_LABEL, { error: () => `label must be "${RTVI_LABEL}"` }),
  id: z.string().max(64).optional(),
};

const clientReady = z
  .object({
    ...envelope,
    type: z.literal('client-ready'),
    data: z
      .object({
        version: z.string().max(32).optional(),
        audio: z
          .object({
            sampleRateHz: z.number().refine((rate) => (CLIENT_SAMPLE_RATES_HZ as readonly number[]).includes(rate), {
              message: `sampleRateHz must be one of ${CLIENT_SAMPLE_RATES_HZ.join(', ')}`,
            }),
          })
          .strict()
          // The page's wire needs it; Pipecat's protobuf frames carry their rate with the audio.
          .optional(),
      })
      .passthrough(),
  })
  .strict();

/** A camera frame for vision profiles: a base64 JPEG (a data: URL is accepted too). */
const userImage = z
  .object({
    ...envelope,
    type: z.literal('user-image'),
    data: z
      .object({
        imageBase64: z
          .string()
          .min(16)
          .max(48 * 1024)
          .regex(
            /^(data:image\/(jpeg|png|webp);base64,)?[A-Za-z0-9+/]+={0,2}$/,
            'imageBase64 must be a base64 JPEG, PNG or WebP',
          ),
      })
      .strict(),
  })
  .strict();

/** The client is leaving on purpose (the leave button). */
const disconnectBot = z
  .object({ ...envelope, type: z.literal('disconnect-bot'), data: z.unknown().optional() })
  .strict();

/**
 * The client's answer to an `llm-function-call` (the Pipecat SDK sends it when a handler
 * registered with registerFunctionCallHandler returns). `result` is any JSON; its size is checked
 * where it is used, so a result too large becomes an error result rather than a closed socket.
 */
const functionCallResult = z
  .object({
    ...envelope,
    type: z.literal('llm-function-call-result'),
    data: z
      .object({
        function_name: z.string().min(1).max(64),
        tool_call_id: z.string().min(1).max(256),
        arguments: z.record(z.string(), z.unknown()).optional(),
        result: z.unknown(),
      })
      .passthrough(),
  })
  .strict();
export type FunctionCallResultMessage = z.output<typeof functionCallResult>;

export const clientMessage = z.discriminatedUnion('type', [clientReady, userImage, disconnectBot, functionCallResult]);
export type ClientMessage = z.output<typeof clientMessage>;

/** Server → client message types. */
export type ServerMessageType =
  | 'bot-ready'
  | 'user-started-speaking'
  | 'user-stopped-speaking'
  | 'bot-started-speaking'
  | 'bot-stopped-speaking'
  | 'user-transcription'
  | 'bot-transcription'
  | 'bot-llm-text'
  | 'bot-interrupted'
  | 'metrics'
  | 'llm-function-call'
  | 'error';

export function serverMessage(type: ServerMessageType, data?: Record<string, unknown>): string {
  return JSON.stringify(data === undefined ? { label: RTVI_LABEL, type } : { label: RTVI_LABEL, type, data });
}
