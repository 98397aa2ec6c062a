import type { Logger } from 'pino';
import type { SuspicionDecision } from './speech-suspicion.js';
import type { VadAnalyzerParams as VadParams } from './vad-analyzer.js';

/** A suspicion decision (see SuspicionDecision) with the window it was made on. */
export type SuspicionDecisionAt = SuspicionDecision & {
  probability: number;
  volume: number;
  /** End of the window decided on, in ms of audio pushed since the VAD's first frame. */
  atMs: number;
};

/** What the call needs from voice activity detection; one per call. */
export interface CallVad {
  /** One 20 ms frame of 8 kHz PCM. May run inference asynchronously; events keep their order. */
  push(pcm: Int16Array): void;
  dispose(): void;
}

export interface CallVadEvents {
  /** start_secs of speech confirmed; `atMs`: the confirming window's end, in ms of audio pushed. */
  onSpeechStart(event?: { atMs: number }): void;
  /**
   * stop_secs of silence after speech. `sinceMs`: where the speech ended (the start of that
   * silence), in ms of audio pushed since the call's first frame.
   */
  onSpeechStop(event?: { sinceMs: number }): void;
  /** The first window(s) of plausible speech, before start_secs confirms it (onSpeechStart) or it is dismissed. */
  onSpeechSuspected?(atMs?: number): void;
  /** A suspicion that was not speech after all (a cough, a clatter, line noise). */
  onSpeechDismissed?(): void;
  /** Every decision of the speech suspicion (also logged at debug), for the call's summary. */
  onSuspicionDecision?(decision: SuspicionDecisionAt): void;
}

export type CallVadFactory = (params: VadParams, events: CallVadEvents, log: Logger) => CallVad;
