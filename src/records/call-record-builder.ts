import type { CallEvents } from '../pipeline/call-deps.js';
import type { CallSummary, TurnTimings } from '../pipeline/call-metrics.js';
import type { CallObserver } from '../pipeline/call-observer.js';
import type { CallStart } from '../pipeline/call-transport.js';
import { callOutcome } from './call-outcome.js';
import type { CallCounts, CallOutcome, TranscriptEntry, TurnBreakdown } from './call-record.js';

/** What the builder hands over when the call has ended: everything the record's one write needs. */
export interface BuiltCallRecord {
  endedAt: Date;
  durationMs: number;
  outcome: CallOutcome;
  endReason: string;
  callSid: string | undefined;
  /** The carrier's From and To, when its TwiML carried them as stream parameters. */
  from: string | undefined;
  to: string | undefined;
  counts: CallCounts;
  turns: TurnBreakdown[];
  /** Undefined when the configuration turned transcripts off. */
  transcript: TranscriptEntry[] | undefined;
  medianResponseMs: number | null;
}

export interface CallRecordBuilderOptions {
  /** The record's id. */
  callId: string;
  engine: 'pipeline' | 's2s';
  /** The VAD's stop_secs in ms: it reports the caller's turn over this long after their last voiced frame. */
  vadStopMs: number;
  transcript: boolean;
  /** The transport started: the carrier's call sid and the From and To it carried, when it did. */
  onStarted?(start: { callSid: string | undefined; from: string | undefined; to: string | undefined }): void;
  onEnded(record: BuiltCallRecord): void;
  /** Building the record failed: told instead of onEnded, never thrown into the call's end. */
  onBuildFailed?(err: unknown): void;
  /** Monotonic ms; the call's time zero is its value at construction (tests drive it). */
  now?: () => number;
}

interface TurnState {
  timings: TurnTimings;
  originMs: number;
  startedAtMs: number;
  vadStopAtMs?: number;
  sttFinalAtMs?: number;
  pieces: string[];
  heardText?: string;
  heardMs?: number;
  producedMs?: number;
  cutAtMs?: number;
  playedAtMs?: number;
  /** The reply was paused on suspected speech at this time, and not resumed since. */
  pausedAtMs?: number;
  interruption?: { onsetAtMs: number; clearAtMs: number };
}

interface CallerUtterance {
  startMs: number;
  endMs: number | undefined;
  texts: string[];
}

/**
 * Watches one call (a CallObserver, plus the call's live events) and, when it ends, builds its
 * record: the counters, each reply's latency breakdown, and the transcript with the bot's words
 * as the caller heard them. Cheap per event (a timestamp and a push); the work is at the end.
 */
export class CallRecordBuilder implements CallObserver {
  readonly events: CallEvents;
  readonly callId: string;
  private readonly now: () => number;
  private readonly zeroMs: number;
  private readonly turns: TurnState[] = [];
  private readonly byTimings = new Map<TurnTimings, TurnState>();
  private readonly callerEntries: TranscriptEntry[] = [];
  private utterance: CallerUtterance | undefined;
  private lastSpeechStartAtMs: number | undefined;
  private lastFinalAtMs: number | undefined;
  private callSid: string | undefined;
  private from: string | undefined;
  private to: string | undefined;
  private ended = false;

  constructor(private readonly options: CallRecordBuilderOptions) {
    this.callId = options.callId;
    this.now = options.now ?? (() => performance.now());
    this.zeroMs = this.now();
    this.events = {
      onUserSpeaking: (speaking) => this.onUserSpeaking(speaking),
      onUserTranscript: (text, final) => {
        if (final && text.trim()) this.onCallerFinal(text.trim());
      },
      onBotText: (text) => this.turns.at(-1)?.pieces.push(text),
      onBotSpeaking: (speaking) => {
        const turn = this.turns.at(-1);
        if (!speaking && turn && turn.cutAtMs === undefined) turn.playedAtMs ??= this.now();
      },
    };
  }

  callStarted(start: CallStart): void {
    this.callSid = start.callSid || undefined;
    this.from = start.customParameters?.from?.slice(0, 64);
    this.to = start.customParameters?.to?.slice(0, 64);
    this.options.onStarted?.({ callSid: this.callSid, from: this.from, to: this.to });
  }

  replyStarted(timings: TurnTimings, originMs: number, afterCallerSpoke: boolean): void {
    const now = this.now();
    this.closeUtterance();
    const turn: TurnState = { timings, originMs, startedAtMs: now, pieces: [] };
    // An answer's origin is the VAD's stop when the caller spoke; the reply may start in the same
    // millisecond (the STT's finals already covered the speech), so the session says which it is.
    if (afterCallerSpoke) {
      turn.vadStopAtMs = originMs;
      if (this.lastFinalAtMs !== undefined && this.lastFinalAtMs >= (this.lastSpeechStartAtMs ?? 0))
        turn.sttFinalAtMs = this.lastFinalAtMs;
    }
    this.turns.push(turn);
    this.byTimings.set(timings, turn);
  }

  replyCut(timings: TurnTimings, heardMs: number, producedMs: number, heardText?: string): void {
    const turn = this.byTimings.get(timings);
    if (!turn || turn.cutAtMs !== undefined) return;
    const now = this.now();
    turn.cutAtMs = now;
    turn.heardMs = heardMs;
    turn.producedMs = producedMs;
    turn.heardText = heardText;
    if (timings.interrupted) {
      const firstFrameAtMs =
        timings.firstFrameSentMs === undefined ? turn.startedAtMs : turn.originMs + timings.firstFrameSentMs;
      const speechStart =
        this.lastSpeechStartAtMs !== undefined && this.lastSpeechStartAtMs >= firstFrameAtMs
          ? this.lastSpeechStartAtMs
          : undefined;
      const onsetAtMs = Math.min(turn.pausedAtMs ?? now, speechStart ?? now);
      turn.interruption = { onsetAtMs, clearAtMs: turn.pausedAtMs ?? now };
    }
  }

  replyPaused(): void {
    const turn = this.turns.at(-1);
    if (turn) turn.pausedAtMs = this.now();
  }

  replyResumed(): void {
    const turn = this.turns.at(-1);
    if (turn) turn.pausedAtMs = undefined;
  }

  callEnded(reason: string, ourSide: boolean, summary: CallSummary): void {
    if (this.ended) return;
    this.ended = true;
    try {
      this.build(reason, ourSide, summary);
    } catch (err) {
      this.options.onBuildFailed?.(err);
    }
  }

  private build(reason: string, ourSide: boolean, summary: CallSummary): void {
    const endMs = this.now();
    this.closeUtterance(endMs);
    const turns = this.turns.map((turn, i) => this.breakdown(turn, i + 1));
    const responses = turns
      .filter((t) => t.kind === 'answer' && t.response_ms !== undefined)
      .map((t) => t.response_ms!)
      .sort((a, b) => a - b);
    this.options.onEnded({
      endedAt: new Date(),
      durationMs: Math.round(endMs - this.zeroMs),
      outcome: callOutcome(reason, ourSide, summary.providerErrors),
      endReason: reason,
      callSid: this.callSid,
      from: this.from,
      to: this.to,
      counts: {
        turns: summary.turns,
        barge_ins: summary.bargeIns,
        pauses: summary.pauses,
        resumes: summary.resumes,
        apologies: summary.perTurn.filter((t) => t.kind === 'apology').length,
        tool_calls: Object.values(summary.tools).reduce((sum, tool) => sum + tool.calls, 0),
        provider_errors: summary.providerErrors,
        dtmf_digits: summary.dtmfDigits,
      },
      turns,
      transcript: this.options.transcript ? this.transcript(turns, endMs) : undefined,
      medianResponseMs: responses.length > 0 ? responses[Math.floor((responses.length - 1) / 2)]! : null,
    });
  }

  // ---- the caller ----

  private onUserSpeaking(speaking: boolean): void {
    const now = this.now();
    if (speaking) {
      this.lastSpeechStartAtMs = now;
      // A new stretch of speech after one that already has words is a new utterance.
      if (this.utterance && this.utterance.texts.length > 0 && this.utterance.endMs !== undefined)
        this.closeUtterance();
      this.utterance ??= { startMs: now, endMs: undefined, texts: [] };
      this.utterance.endMs = undefined;
    } else if (this.utterance) {
      this.utterance.endMs = now;
    }
  }

  private onCallerFinal(text: string): void {
    const now = this.now();
    this.lastFinalAtMs = now;
    // A transcript without a VAD start before it (a speech-to-speech vendor's late one): it ends now.
    this.utterance ??= { startMs: this.lastSpeechStartAtMs ?? now, endMs: now, texts: [] };
    this.utterance.texts.push(text);
  }

  private closeUtterance(endMs = this.now()): void {
    const utterance = this.utterance;
    if (!utterance || utterance.texts.length === 0) return;
    this.utterance = undefined;
    this.callerEntries.push({
      speaker: 'caller',
      text: utterance.texts.join(' '),
      start_ms: this.rel(utterance.startMs),
      end_ms: this.rel(utterance.endMs ?? endMs),
    });
  }

  // ---- at the end ----

  private rel(ms: number): number {
    return Math.max(0, Math.round(ms - this.zeroMs));
  }

  private at(turn: TurnState, stageMs: number | undefined): number | undefined {
    return stageMs === undefined ? undefined : this.rel(turn.originMs + stageMs);
  }

  private breakdown(turn: TurnState, index: number): TurnBreakdown {
    const t = turn.timings;
    const s2s = this.options.engine === 's2s';
    const usesLlm = !s2s && (t.kind === 'answer' || t.kind === 'dtmf' || t.kind === 'greeting');
    const out: TurnBreakdown = { index, kind: t.kind, engine: this.options.engine };
    if (turn.vadStopAtMs !== undefined) {
      out.caller_last_voiced_ms = this.rel(turn.vadStopAtMs - this.options.vadStopMs);
      out.vad_stop_ms = this.rel(turn.vadStopAtMs);
    }
    if (turn.sttFinalAtMs !== undefined) out.stt_final_ms = this.rel(turn.sttFinalAtMs);
    if (s2s && t.kind === 'answer') out.vendor_speech_started_ms = this.rel(turn.originMs);
    if (usesLlm) {
      out.llm_request_ms = this.rel(turn.startedAtMs);
      out.llm_first_token_ms = this.at(turn, t.llmFirstTokenMs);
    }
    out.tts_first_audio_ms = this.at(turn, t.ttsFirstAudioMs);
    out.first_frame_sent_ms = this.at(turn, t.firstFrameSentMs);
    const endAtMs = turn.cutAtMs ?? turn.playedAtMs;
    if (endAtMs !== undefined) out.ended_ms = this.rel(endAtMs);
    if (out.first_frame_sent_ms !== undefined) {
      const from = out.caller_last_voiced_ms ?? out.vendor_speech_started_ms ?? this.rel(turn.startedAtMs);
      out.response_ms = out.first_frame_sent_ms - from;
      out.heard_ms =
        turn.heardMs ?? (out.ended_ms === undefined ? undefined : Math.max(0, out.ended_ms - out.first_frame_sent_ms));
    }
    if (turn.interruption)
      out.interruption = {
        onset_ms: this.rel(turn.interruption.onsetAtMs),
        clear_ms: this.rel(turn.interruption.clearAtMs),
      };
    for (const key of Object.keys(out) as Array<keyof TurnBreakdown>) if (out[key] === undefined) delete out[key];
    return out;
  }

  private transcript(turns: TurnBreakdown[], endMs: number): TranscriptEntry[] {
    const entries = [...this.callerEntries];
    this.turns.forEach((turn, i) => {
      const view = turns[i]!;
      if (view.first_frame_sent_ms === undefined) return; // the caller heard nothing of it
      const text = this.heardText(turn);
      if (!text) return;
      entries.push({
        speaker: 'bot',
        text,
        start_ms: view.first_frame_sent_ms,
        end_ms: Math.max(view.first_frame_sent_ms, view.ended_ms ?? this.rel(endMs)),
        ...(turn.cutAtMs !== undefined && turn.heardMs !== undefined ? { interrupted: true } : {}),
      });
    });
    return entries.sort((a, b) => a.start_ms - b.start_ms);
  }

  /** The bot's words the caller heard: what the session measured, else a share of the text by time heard. */
  private heardText(turn: TurnState): string {
    if (turn.heardText !== undefined) return turn.heardText.trim();
    const whole = (this.options.engine === 's2s' ? turn.pieces.join('') : turn.pieces.join(' '))
      .replace(/\s+/g, ' ')
      .trim();
    if (turn.cutAtMs === undefined || turn.heardMs === undefined) return whole;
    const share = (turn.producedMs ?? 0) > 0 ? turn.heardMs / turn.producedMs! : 1;
    return wordsHeard(whole, share);
  }
}

/** The words of `text` whose middle falls within `share` (0..1) of its characters, with an ellipsis when cut. */
export function wordsHeard(text: string, share: number): string {
  const words = text.split(' ').filter((w) => w.length > 0);
  const heardChars = Math.max(0, Math.min(1, share)) * text.length;
  let position = 0;
  let count = 0;
  for (const word of words) {
    if (position + word.length / 2 > heardChars) break;
    count += 1;
    position += word.length + 1;
  }
  const kept = words.slice(0, count).join(' ');
  return kept.length > 0 && count < words.length ? `${kept}…` : kept;
}
