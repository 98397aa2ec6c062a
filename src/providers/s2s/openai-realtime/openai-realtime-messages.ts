import { z } from 'zod';

/**
 * OpenAI Realtime events this adapter reads (docs/providers.md section 7), in both protocol versions:
 * the current one ("ga") and the beta (`OpenAI-Beta: realtime=v1`), which names a few audio
 * events differently. Anything else is ignored.
 */
export type RealtimeProtocol = 'ga' | 'beta';

export const AUDIO_DELTA: Record<RealtimeProtocol, string> = {
  ga: 'response.output_audio.delta',
  beta: 'response.audio.delta',
};
export const AUDIO_DONE: Record<RealtimeProtocol, string> = {
  ga: 'response.output_audio.done',
  beta: 'response.audio.done',
};
export const TRANSCRIPT_DONE: Record<RealtimeProtocol, string> = {
  ga: 'response.output_audio_transcript.done',
  beta: 'response.audio_transcript.done',
};

/** An audio delta carries `item_id` and `delta` (base64) as strings; checked by hand, it is the hot path. */
export const audioDone = z.looseObject({ item_id: z.string() });
export const transcriptDone = z.looseObject({ item_id: z.string(), transcript: z.string() });
export const inputTranscription = z.looseObject({ transcript: z.string() });
export const outputItemDone = z.looseObject({ item: z.looseObject({ type: z.string() }) });
export const functionCallItem = z.looseObject({
  type: z.literal('function_call'),
  call_id: z.string().min(1),
  name: z.string().min(1),
  arguments: z.string(),
});
export const errorEvent = z.looseObject({
  error: z.looseObject({ type: z.string().optional(), code: z.string().nullish(), message: z.string().optional() }),
});

/** Errors that only say a cancel or a response request raced the server; nothing is wrong. */
export const HARMLESS_ERROR_CODES: ReadonlySet<string> = new Set([
  'response_cancel_not_active',
  'conversation_already_has_active_response',
]);
