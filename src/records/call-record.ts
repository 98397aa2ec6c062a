/**
 * A call record as the API shows it, and the parts written at the end of the call. Times inside
 * a call (turns, transcript) are ms from the call's start, which is also the recording's time
 * zero, so a transcript cue and the recording line up.
 */

/** Who ended the call and why. */
export const CALL_OUTCOMES = [
  'caller_hung_up',
  'bot_ended',
  'max_duration',
  'transferred',
  'provider_failure',
  'drain',
  'error',
  'interrupted',
] as const;
export type CallOutcome = (typeof CALL_OUTCOMES)[number];

export type CallStatus = 'in-progress' | 'ended' | 'interrupted';

export interface CallCounts {
  turns: number;
  barge_ins: number;
  pauses: number;
  resumes: number;
  apologies: number;
  tool_calls: number;
  provider_errors: number;
  dtmf_digits: number;
}

/**
 * One reply of the bot and what led to it, each stage in ms from the call's start (absent when
 * it did not happen: a greeting has no caller before it, a reply cut early has no audio).
 */
export interface TurnBreakdown {
  index: number;
  kind: 'answer' | 'greeting' | 'dtmf' | 'goodbye' | 'apology';
  /** The pipeline's stages, or the speech-to-speech vendor's events. */
  engine: 'pipeline' | 's2s';
  caller_last_voiced_ms?: number;
  vad_stop_ms?: number;
  stt_final_ms?: number;
  llm_request_ms?: number;
  llm_first_token_ms?: number;
  tts_first_audio_ms?: number;
  first_frame_sent_ms?: number;
  /** speech-to-speech: the vendor heard the caller start (its `speech_started`). */
  vendor_speech_started_ms?: number;
  /** The bot's audio of this reply ended: played out, or cut. */
  ended_ms?: number;
  /** How long the caller waited: their last voiced frame (or the reply's start) to the first frame sent. */
  response_ms?: number;
  /** The caller cut this reply: when they started speaking over it, and when the line was cleared. */
  interruption?: { onset_ms: number; clear_ms: number };
  /** Ms of the reply's audio the caller heard. */
  heard_ms?: number;
}

export interface TranscriptEntry {
  speaker: 'caller' | 'bot';
  text: string;
  start_ms: number;
  end_ms: number;
  /** The bot was cut off here: the text is what the caller heard. */
  interrupted?: boolean;
}

export interface Transcript {
  call_id: string;
  entries: TranscriptEntry[];
}

/** The record without its turns: what a list shows and what the status callback posts. */
export interface CallSummaryView {
  id: string;
  kind: 'phone' | 'room';
  status: CallStatus;
  bot_config_id: string | null;
  profile: string;
  from: string | null;
  to: string | null;
  call_sid: string | null;
  room_name: string | null;
  recording_id: string | null;
  node_id: string;
  started_at: string;
  ended_at: string | null;
  duration_ms: number | null;
  outcome: CallOutcome | null;
  end_reason: string | null;
  counts: CallCounts | null;
  /** Median of the answers' response_ms. */
  median_response_ms: number | null;
  /** The services of the call, for telling vendors apart. */
  services: Record<string, string> | null;
  has_transcript: boolean;
}

export interface CallRecordView extends CallSummaryView {
  turns: TurnBreakdown[];
}

/** What summary_json holds. */
export interface StoredSummary {
  counts: CallCounts;
  median_response_ms: number | null;
  services: Record<string, string>;
}
