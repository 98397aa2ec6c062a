import type { CallObserver } from './call-observer.js';
import { type Clock, REAL_CLOCK } from '../shared/clock.js';
import { type SuspicionRecord, SuspicionTrace } from './suspicion-trace.js';

/** Per-turn timings, ms from the moment VAD declared the caller's turn over (or the reply began). */
export interface TurnTimings {
  turn: number;
  /** Why the reply ran: an answer, the greeting, DTMF, the goodbye at max_duration, an apology. */
  kind: 'answer' | 'greeting' | 'dtmf' | 'goodbye' | 'apology';
  llmFirstTokenMs?: number;
  /** The reply's first function call started, and every call of its last round answered (ms from the turn's end). */
  toolsStartedMs?: number;
  toolsDoneMs?: number;
  ttsFirstAudioMs?: number;
  firstFrameSentMs?: number;
  interrupted: boolean;
}

/** The end-of-call figures: logged once per call, and counted by /metrics. */
export interface CallSummary {
  durationMs: number;
  turns: number;
  bargeIns: number;
  falseAlarms: number;
  /** Replies paused on suspected speech, and those resumed because it was not an interruption. */
  pauses: number;
  resumes: number;
  /** Per resume: how long the bot was silent, from the pause (its `clear`) to playing on, ms. */
  pausedMs: number[];
  providerErrors: number;
  /** STT transcripts dropped because the caller's audio could not hold them (a provider fault). */
  droppedTranscripts: number;
  dtmfDigits: number;
  /** Function calls per function: how many, how many failed (error, timeout, cancelled), and each one's time, ms. */
  tools: Record<string, ToolFigures>;
  perTurn: Array<Omit<TurnTimings, 'turn'>>;
  /** The instant pause's latest decisions, in the caller's audio time (see suspicion-trace.ts). */
  suspicions: SuspicionRecord[];
}

/** One function's calls on a call. */
export interface ToolFigures {
  calls: number;
  failures: number;
  latencyMs: number[];
}

export class CallMetrics {
  readonly startedAtMs: number;

  /** `clock`: the call's; `observer` hears of pauses and resumes as they happen (the call record times them). */
  constructor(
    readonly clock: Clock = REAL_CLOCK,
    private readonly observer?: Pick<CallObserver, 'replyPaused' | 'replyResumed'>,
  ) {
    this.startedAtMs = clock.now();
  }

  turns: TurnTimings[] = [];
  bargeIns = 0;
  falseAlarms = 0;
  pauses = 0;
  resumes = 0;
  pausedMs: number[] = [];
  /** The caller's audio clock and the suspicion decisions on it. */
  readonly suspicions = new SuspicionTrace();
  private pausedAtMs: number | undefined;

  /** The bot paused on suspected speech. */
  paused(): void {
    this.pauses += 1;
    this.pausedAtMs = this.clock.now();
    this.observer?.replyPaused();
  }

  /** The paused reply plays on. */
  resumed(): void {
    this.resumes += 1;
    if (this.pausedAtMs !== undefined) this.pausedMs.push(elapsedSince(this.clock, this.pausedAtMs));
    this.pausedAtMs = undefined;
    this.observer?.replyResumed();
  }
  providerErrors = 0;
  droppedTranscripts = 0;
  dtmfDigits = 0;
  readonly tools: Record<string, ToolFigures> = {};

  /** A function call was answered (or failed, timed out, was cancelled). */
  toolCalled(name: string, outcome: 'ok' | 'error' | 'timeout' | 'cancelled', latencyMs: number): void {
    this.tools[name] ??= { calls: 0, failures: 0, latencyMs: [] };
    const figures = this.tools[name];
    figures.calls += 1;
    if (outcome !== 'ok') figures.failures += 1;
    figures.latencyMs.push(latencyMs);
  }

  summary(): CallSummary {
    return {
      durationMs: Math.round(this.clock.now() - this.startedAtMs),
      turns: this.turns.length,
      bargeIns: this.bargeIns,
      falseAlarms: this.falseAlarms,
      pauses: this.pauses,
      resumes: this.resumes,
      pausedMs: this.pausedMs,
      providerErrors: this.providerErrors,
      droppedTranscripts: this.droppedTranscripts,
      dtmfDigits: this.dtmfDigits,
      tools: this.tools,
      perTurn: this.turns.map((t) => ({
        kind: t.kind,
        llmFirstTokenMs: t.llmFirstTokenMs,
        toolsStartedMs: t.toolsStartedMs,
        toolsDoneMs: t.toolsDoneMs,
        ttsFirstAudioMs: t.ttsFirstAudioMs,
        firstFrameSentMs: t.firstFrameSentMs,
        interrupted: t.interrupted,
      })),
      suspicions: [...this.suspicions.records],
    };
  }
}

/** Ms on `clock` since `originMs` (a time on it), to 0.1 ms. */
export function elapsedSince(clock: Clock, originMs: number): number {
  return Math.round((clock.now() - originMs) * 10) / 10;
}
