import type { CallSummary } from '../src/pipeline/call-metrics.js';
import type { SuspicionRecord } from '../src/pipeline/suspicion-trace.js';
import type { CallReport } from '../src/tools/simulator/call-report.js';
import { percentile } from './report.js';

/**
 * Splits each interruption's onset → `clear` into the code's decision and the machine's delay, so
 * the engagement figure means something on a loaded machine:
 * - the code's decision, in audio time: how much of the caller's speech (from the first voiced
 *   frame, on the caller's audio clock) the server's VAD had heard at the window the pause was
 *   decided on, and what that decision was (paused, held, not paused and why, or speech-start
 *   with no suspicion first), with the likely windows refused before it (too quiet for
 *   min_volume, not re-armed): no clock is involved, the same audio gives the same figure;
 * - the machine's share: on the server, from the arrival of the frame that completed that window
 *   to the decision (inference queued behind other calls, event-loop lag), and the rest of the
 *   wall-clock figure (the caller's frame pacing, the sockets, the bench's own event loop).
 */

/**
 * The code's share of the 120 ms goal, in audio: the caller's frame that completes the window and
 * the server's `clear` back take a frame each (as in src/vad/suspicion-onsets.test.ts).
 */
export const DECIDED_WITHIN_AUDIO_MS = 80;
const FRAME_MS = 20;
/** Decisions further than this past the onset belong to something else (the next utterance). */
const DECISION_HORIZON_MS = 3000;

export interface InterruptionTiming {
  where: string;
  clip: string;
  /** The bot was between sentences at the onset and never played over the caller. */
  notTalkedOver: boolean;
  /** Wall clock, simulator: voice onset (or overlap start) to `clear`; null when none came. */
  onsetToClearMs: number | null;
  /** Caller audio from the first voiced frame to the end of the window decided on; null: no decision seen. */
  decisionAudioMs: number | null;
  /** The first decision after the onset: paused, held, not paused (why), speech-start. */
  decision: string;
  /** Likely windows refused between the onset and that decision, by reason. */
  refused: Record<string, number>;
  /** Server: the deciding window's last frame arrived → the decision, ms. */
  serverLagMs: number | null;
}

const DECIDING = (r: SuspicionRecord) =>
  r.outcome === 'paused' || r.outcome === 'held' || r.outcome === 'speech-start' || r.outcome.startsWith('not paused');

/** One interruption (utterance `index` of `report`) against its server call's suspicion records. */
export function interruptionTiming(
  where: string,
  report: CallReport,
  index: number,
  summary: CallSummary | undefined,
): InterruptionTiming {
  const said = report.metrics.utterances[index];
  const timing: InterruptionTiming = {
    where,
    clip: said?.clip ?? '?',
    notTalkedOver: said ? !said.bargeIn : false,
    onsetToClearMs: said?.bargeInLatencyMs ?? null,
    decisionAudioMs: null,
    decision: summary ? 'no decision' : 'no server summary',
    refused: {},
    serverLagMs: null,
  };
  const onset = said?.firstVoicedAudioMs;
  if (onset == null || !summary?.suspicions) return timing;
  // From the clip's first frame: the model may hear speech in the quiet start of a word that the
  // simulator's energy threshold counts as voiced a frame or two later.
  const from = said?.startAudioMs ?? onset;
  const after = summary.suspicions.filter((r) => r.atAudioMs > from && r.atAudioMs <= onset + DECISION_HORIZON_MS);
  const decided = after.find(DECIDING);
  for (const r of after) {
    if (decided && r.atAudioMs > decided.atAudioMs) break;
    if (r.outcome.startsWith('refused')) timing.refused[r.outcome] = (timing.refused[r.outcome] ?? 0) + 1;
  }
  if (!decided) return timing;
  timing.decisionAudioMs = decided.atAudioMs - onset;
  timing.decision = decided.outcome;
  timing.serverLagMs = decided.lagMs;
  return timing;
}

/** The code decided in time: paused (or held, or it was already paused) within DECIDED_WITHIN_AUDIO_MS of audio. */
export function decidedInTime(t: InterruptionTiming): boolean {
  if (t.notTalkedOver) return true;
  const pausedOrHeld = t.decision === 'paused' || t.decision === 'held' || t.decision === 'not paused: already paused';
  return pausedOrHeld && t.decisionAudioMs !== null && t.decisionAudioMs <= DECIDED_WITHIN_AUDIO_MS;
}

/** Why an interruption missed the wall-clock goal: the code's decision, or the machine. */
export function lateCause(t: InterruptionTiming, engagedWithinMs: number): string | null {
  if (t.notTalkedOver || (t.onsetToClearMs !== null && t.onsetToClearMs <= engagedWithinMs)) return null;
  if (t.decisionAudioMs === null) return `code: ${t.decision}`;
  if (!decidedInTime(t)) {
    if (t.decision !== 'paused' && t.decision !== 'held') return `code: ${t.decision}`;
    const refusals = Object.entries(t.refused)
      .map(([why, n]) => `${why} x${n}`)
      .join(', ');
    return `code: suspicion after ${t.decisionAudioMs} ms of speech (${refusals || 'model below confidence until then'})`;
  }
  return 'machine: decided in time, clear late';
}

export interface TimingSplit {
  /** Interruptions the code decided in time (audio), of all. */
  decidedInTime: number;
  interruptions: number;
  decisionAudioMs: number[];
  serverLagMs: number[];
  /**
   * onset → clear minus when the caller's frame completing the deciding window left and the
   * server's lag: the caller's pacing, the sockets, the bench's loop.
   */
  restMs: number[];
  causes: Record<string, number>;
}

export function splitTimings(timings: readonly InterruptionTiming[], engagedWithinMs: number): TimingSplit {
  const split: TimingSplit = {
    decidedInTime: 0,
    interruptions: timings.length,
    decisionAudioMs: [],
    serverLagMs: [],
    restMs: [],
    causes: {},
  };
  for (const t of timings) {
    if (decidedInTime(t)) split.decidedInTime += 1;
    if (t.decisionAudioMs !== null) split.decisionAudioMs.push(t.decisionAudioMs);
    if (t.serverLagMs !== null) split.serverLagMs.push(t.serverLagMs);
    // The caller sends each 20 ms frame at its start: the frame completing the deciding window
    // leaves (its start - the onset frame's start) after the onset.
    if (t.onsetToClearMs !== null && t.decisionAudioMs !== null && t.serverLagMs !== null)
      split.restMs.push(t.onsetToClearMs - Math.max(0, frameSentAfterMs(t.decisionAudioMs)) - t.serverLagMs);
    const cause = lateCause(t, engagedWithinMs);
    if (cause) split.causes[cause] = (split.causes[cause] ?? 0) + 1;
  }
  return split;
}

/** When the caller's frame holding audio `ms` after the onset frame's start is sent, after that frame. */
function frameSentAfterMs(ms: number): number {
  return Math.ceil(ms / FRAME_MS) * FRAME_MS - FRAME_MS;
}

export function p50p95(values: readonly number[]): string {
  return `${percentile(values, 50) ?? 'n/a'} / ${percentile(values, 95) ?? 'n/a'}`;
}
