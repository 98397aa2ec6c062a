import type { TurnBreakdown } from './call-record.js';

export interface TurnStage {
  /** `stt_final` (VAD stop → STT final), `llm_first_token` (request → first token), `tts_first_audio` (first token → first audio), `s2s_first_audio` (vendor heard the caller → its first audio). */
  stage: 'stt_final' | 'llm_first_token' | 'tts_first_audio' | 's2s_first_audio';
  /** The vendor that stage waited on. */
  vendor: string;
  ms: number;
}

/** Each answer's waits, attributed to the vendor that caused them, so a slow vendor shows on a dashboard. */
export function turnStages(turns: readonly TurnBreakdown[], services: Record<string, string>): TurnStage[] {
  const out: TurnStage[] = [];
  const add = (stage: TurnStage['stage'], vendor: string | undefined, from?: number, to?: number) => {
    if (vendor && from !== undefined && to !== undefined && to >= from) out.push({ stage, vendor, ms: to - from });
  };
  for (const t of turns) {
    if (t.kind !== 'answer') continue;
    if (t.engine === 's2s') {
      add('s2s_first_audio', services.llm, t.vendor_speech_started_ms, t.tts_first_audio_ms);
      continue;
    }
    add('stt_final', services.stt, t.vad_stop_ms, t.stt_final_ms);
    add('llm_first_token', services.llm, t.llm_request_ms, t.llm_first_token_ms);
    add('tts_first_audio', services.tts, t.llm_first_token_ms, t.tts_first_audio_ms);
  }
  return out;
}
