import { z } from 'zod';
import { CALL_OUTCOMES } from '../records/call-record.js';

/** The call records API's answers (calls/call-record.ts's views), for the routes and /openapi.json. */

const counts = z.object({
  turns: z.number().int(),
  barge_ins: z.number().int(),
  pauses: z.number().int(),
  resumes: z.number().int(),
  apologies: z.number().int(),
  tool_calls: z.number().int(),
  provider_errors: z.number().int(),
  dtmf_digits: z.number().int(),
});

const ms = (what: string) => z.number().optional().describe(`${what}, ms from the call's start`);

export const turnBreakdown = z.object({
  index: z.number().int(),
  kind: z.enum(['answer', 'greeting', 'dtmf', 'goodbye', 'apology']),
  engine: z.enum(['pipeline', 's2s']),
  caller_last_voiced_ms: ms("the caller's last voiced frame (VAD stop less stop_secs)"),
  vad_stop_ms: ms('the VAD said the caller stopped'),
  stt_final_ms: ms("the STT's final transcript of the turn"),
  llm_request_ms: ms('the LLM request went out'),
  llm_first_token_ms: ms("the LLM's first token"),
  tts_first_audio_ms: ms("the TTS's (or the speech-to-speech vendor's) first audio"),
  first_frame_sent_ms: ms('the first frame went to the caller'),
  vendor_speech_started_ms: ms('speech-to-speech: the vendor heard the caller start'),
  ended_ms: ms("the reply's audio ended: played out or cut"),
  response_ms: z
    .number()
    .optional()
    .describe("the caller's last voiced frame (or the reply's start) to the first frame sent"),
  interruption: z
    .object({ onset_ms: z.number(), clear_ms: z.number() })
    .optional()
    .describe('the caller cut the reply: when they started, and when the line was cleared'),
  heard_ms: z.number().optional().describe("ms of the reply's audio the caller heard"),
});

export const callSummary = z.object({
  id: z.string(),
  kind: z.enum(['phone', 'room']),
  status: z.enum(['in-progress', 'ended', 'interrupted']),
  bot_config_id: z.string().nullable(),
  profile: z.string(),
  from: z.string().nullable(),
  to: z.string().nullable(),
  call_sid: z.string().nullable(),
  room_name: z.string().nullable(),
  recording_id: z.string().nullable(),
  node_id: z.string().describe('the node that served the call'),
  started_at: z.string().describe('ISO-8601 UTC'),
  ended_at: z.string().nullable(),
  duration_ms: z.number().int().nullable(),
  outcome: z.enum(CALL_OUTCOMES).nullable().describe('who ended the call and why'),
  end_reason: z.string().nullable(),
  counts: counts.nullable(),
  median_response_ms: z.number().nullable(),
  services: z.record(z.string(), z.string()).nullable(),
  has_transcript: z.boolean(),
});

export const callRecord = callSummary.extend({ turns: z.array(turnBreakdown) });

export const callList = z.object({ total_count: z.number().int(), data: z.array(callSummary) });

export const transcript = z.object({
  call_id: z.string(),
  entries: z.array(
    z.object({
      speaker: z.enum(['caller', 'bot']),
      text: z.string(),
      start_ms: z.number(),
      end_ms: z.number(),
      interrupted: z.boolean().optional().describe('the caller cut the bot off here'),
    }),
  ),
});

export const pageLink = z.object({
  url: z.string().describe('the calls page, signed in; the token is in the fragment, never sent to a server log'),
  expires: z.number().int().describe('Unix seconds'),
});
