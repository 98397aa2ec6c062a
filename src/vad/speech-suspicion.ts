import type { VadAnalyzerParams } from './vad-analyzer.js';

/** Windows in a row below `confidence` (about 100 ms: the cough or clatter is over) that dismiss a suspicion. */
export const SUSPICION_DISMISS_WINDOWS = 3;
/**
 * A suspicion still unconfirmed this many windows past start_secs since its last loud, likely
 * window, or twice that since it began (a murmur never loud enough), is dismissed. Counting from
 * the last such window keeps a soft-spoken onset whose volume flickers around min_volume (speech
 * confirmed late) from being dismissed, resumed, and stopped again a moment later.
 */
export const SUSPICION_MAX_EXTRA_WINDOWS = 10;

/**
 * Probability at which a loud window may start a suspicion, when `confidence` is higher: Silero's
 * own speech threshold. The first windows of an onset that begins unvoiced ("hold on", "so") sit
 * between it and Pipecat's 0.7 for a window or two; on the tuning sets (fixtures/tuning-speech,
 * fixtures/audio) starting here brought 158 of 160 interruptions within 80 ms of speech instead of
 * 154, and no suspicion more on the noise clips (the dishes none, the bursts the same). Speech
 * itself is still confirmed at `confidence`, and a suspicion still lives on windows above it.
 */
export const SUSPICION_START_PROBABILITY = 0.5;

export type SuspicionEvent = 'suspected' | 'dismissed';

/**
 * Why a plausible window (probability at or above the start probability) did or did not change
 * the suspicion, for the debug log: a suspicion started, one dismissed (a run of unlikely windows,
 * or overdue), or a plausible window that started none (too quiet for min_volume, or not re-armed
 * since a dismissal).
 */
export type SuspicionDecision =
  | { decision: 'suspected' }
  | { decision: 'dismissed'; reason: 'unlikely run' | 'overdue' }
  | { decision: 'refused'; reason: 'too quiet' | 'not re-armed' };

/**
 * Plausible speech, before start_secs confirms it: the bot may stop talking at the first window
 * rather than a quarter of a second later. A window at or above the start probability (the lower
 * of `confidence` and SUSPICION_START_PROBABILITY) whose own volume (unsmoothed: the smoothed one
 * lags an onset by several windows) reaches `min_volume`, while the caller is not speaking, makes
 * speech suspected; the analyzer's speech-start confirms it; SUSPICION_DISMISS_WINDOWS windows
 * below `confidence` in a row dismiss it. After a dismissal no new suspicion starts until a window
 * below the start probability, so a steady murmur cannot make the bot stop and resume over and over.
 */
export class SpeechSuspicion {
  private suspected = false;
  private windows = 0;
  private windowsSinceLoud = 0;
  private unlikelyRun = 0;
  private armed = true;

  constructor(
    private readonly params: Pick<VadAnalyzerParams, 'confidence' | 'min_volume'>,
    /** Windows of speech the analyzer needs for speech-start. */
    private readonly startWindows: number,
    /** Told each decision (see SuspicionDecision); for the debug log. */
    private readonly onDecision?: (decision: SuspicionDecision, probability: number, volume: number) => void,
  ) {}

  get active(): boolean {
    return this.suspected;
  }

  /**
   * No suspicion open, and a new one may start: the next window's probability matters only if it
   * is loud enough to start one. (While a suspicion is open, or after a dismissal until a window
   * below `confidence`, a quiet window's probability decides what happens next.)
   */
  get atRest(): boolean {
    return !this.suspected && this.armed;
  }

  /** One window while the caller is not (yet) confirmed speaking. */
  update(probability: number, volume: number): SuspicionEvent | null {
    const likely = probability >= this.params.confidence;
    const plausible = probability >= Math.min(this.params.confidence, SUSPICION_START_PROBABILITY);
    if (!this.suspected) {
      if (!plausible) {
        this.armed = true;
        return null;
      }
      if (volume < this.params.min_volume || !this.armed) {
        this.onDecision?.(
          { decision: 'refused', reason: this.armed ? 'too quiet' : 'not re-armed' },
          probability,
          volume,
        );
        return null;
      }
      this.suspected = true;
      this.windows = 0;
      this.windowsSinceLoud = 0;
      this.unlikelyRun = 0;
      this.onDecision?.({ decision: 'suspected' }, probability, volume);
      return 'suspected';
    }
    const maxWindows = this.startWindows + SUSPICION_MAX_EXTRA_WINDOWS;
    this.windows += 1;
    this.windowsSinceLoud = likely && volume >= this.params.min_volume ? 0 : this.windowsSinceLoud + 1;
    this.unlikelyRun = likely ? 0 : this.unlikelyRun + 1;
    const overdue = this.windowsSinceLoud > maxWindows || this.windows > 2 * maxWindows;
    if (this.unlikelyRun < SUSPICION_DISMISS_WINDOWS && !overdue) return null;
    this.suspected = false;
    this.armed = !plausible;
    this.onDecision?.(
      { decision: 'dismissed', reason: this.unlikelyRun >= SUSPICION_DISMISS_WINDOWS ? 'unlikely run' : 'overdue' },
      probability,
      volume,
    );
    return 'dismissed';
  }

  /** The analyzer confirmed speech (speech-start): the suspicion is settled. */
  confirmed(): void {
    this.suspected = false;
  }
}
