/**
 * Decides when the caller's turn ends and when the caller has really interrupted the bot.
 * A pure state machine: VAD and STT events in, decisions out, time from an injected scheduler
 * so tests drive it with fake timers.
 */

export interface TurnScheduler {
  now(): number;
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

export const realScheduler: TurnScheduler = {
  now: () => performance.now(),
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
};

export interface TurnPolicy {
  /**
   * Words an interim transcript must have before speech cuts the bot off. 0 interrupts on VAD
   * alone (VAD already demands start_secs of speech, which filters clicks and bursts).
   */
  minInterruptionWords: number;
  /** After VAD says the caller stopped, how long to wait for STT's final text. */
  finalTranscriptWaitMs: number;
  /**
   * How long to hold a turn that looks finished open for more words (ms; 0 ends it now), given
   * its text so far: the natural-conversation profile waits longer after "um" or a trailing "and".
   */
  extraWaitMs?(text: string): number;
  /** Upper bound on all extra waits of one turn, ms. */
  maxExtraWaitMs?: number;
  /** Acknowledgements ("mm-hmm") that neither cut the bot off nor start a reply while it talks. */
  isBackchannel?(text: string): boolean;
}

export const DEFAULT_TURN_POLICY: TurnPolicy = { minInterruptionWords: 0, finalTranscriptWaitMs: 1000 };

export type TurnDecision =
  /** Cut the bot off now: abort the reply, clear the carrier's buffer, truncate the context. */
  | { type: 'barge-in' }
  /** The caller started speaking (whether or not that interrupts anything). */
  | { type: 'user-speaking' }
  /** VAD saw the end of speech: ask STT to finalise now. */
  | { type: 'finalize-stt' }
  /** The caller's turn is over; answer this text. */
  | { type: 'user-turn'; text: string }
  /** Speech was detected but produced no words (noise, a cough): nothing to answer. */
  | { type: 'false-alarm' };

export class TurnController {
  private userSpeaking = false;
  private botSpeaking = false;
  private bargedIn = false;
  private finals: string[] = [];
  private interim = '';
  private waitingForFinal = false;
  private timer: unknown;
  /** Extra wait already spent on this turn (extraWaitMs), ms, and when the current one began. */
  private heldMs = 0;
  private holdStartedAtMs: number | undefined;

  constructor(
    private readonly emit: (decision: TurnDecision) => void,
    private readonly policy: TurnPolicy = DEFAULT_TURN_POLICY,
    private readonly scheduler: TurnScheduler = realScheduler,
  ) {}

  /** The caller is speaking, or has just stopped and their turn is not decided yet. */
  get turnOpen(): boolean {
    return this.userSpeaking || this.timer !== undefined;
  }

  /** Playout tells us whether bot audio is queued or playing (or a reply is being prepared). */
  setBotSpeaking(speaking: boolean): void {
    this.botSpeaking = speaking;
    if (!speaking) this.bargedIn = false;
  }

  /** VAD confirmed speech (start_secs of it). */
  onVadStart(): void {
    this.userSpeaking = true;
    this.cancelWait();
    this.emit({ type: 'user-speaking' });
    if (this.policy.minInterruptionWords <= 0) this.maybeBargeIn();
    else if (this.interruptingWords() >= this.policy.minInterruptionWords) this.maybeBargeIn();
  }

  /**
   * VAD saw stop_secs of silence: ask STT to finalise, and end the turn on the final that answers
   * (or on the STT's own final, whichever comes first). Always, even with a final already in
   * hand: the audio after that final may hold words no interim has shown yet (a caller who
   * paused mid-sentence), and without Finalize they would come only at the STT's own
   * end-of-speech, as a second turn that cuts off the answer to the first.
   */
  onVadStop(): void {
    if (!this.userSpeaking) return;
    this.userSpeaking = false;
    this.emit({ type: 'finalize-stt' });
    this.waitingForFinal = true;
    this.timer = this.scheduler.setTimeout(() => this.onFinalTimeout(), this.policy.finalTranscriptWaitMs);
  }

  onInterim(text: string): void {
    this.interim = text.trim();
    if (
      this.userSpeaking &&
      this.policy.minInterruptionWords > 0 &&
      this.interruptingWords() >= this.policy.minInterruptionWords
    ) {
      this.maybeBargeIn();
    }
  }

  onFinal(text: string): void {
    const trimmed = text.trim();
    this.interim = '';
    if (trimmed.length > 0) this.finals.push(trimmed);
    if (this.userSpeaking) {
      if (this.policy.minInterruptionWords > 0 && this.interruptingWords() >= this.policy.minInterruptionWords)
        this.maybeBargeIn();
      return;
    }
    if (this.waitingForFinal) {
      if (this.finals.length > 0) this.endTurn();
      return;
    }
    // Words without VAD speech (a quiet caller VAD missed): still the caller's turn.
    if (trimmed.length > 0) this.endTurn();
  }

  /** Ends all timers (call over). */
  dispose(): void {
    this.cancelWait();
  }

  private maybeBargeIn(): void {
    if (this.botSpeaking && !this.bargedIn) {
      this.bargedIn = true;
      this.emit({ type: 'barge-in' });
    }
  }

  private onFinalTimeout(): void {
    this.timer = undefined;
    this.waitingForFinal = false;
    const text = this.pendingText();
    if (text.length > 0) this.endTurn();
    else {
      this.reset();
      this.emit({ type: 'false-alarm' });
    }
  }

  private endTurn(): void {
    const text = this.pendingText();
    const maxExtraWaitMs = this.policy.maxExtraWaitMs ?? 0;
    if (this.policy.extraWaitMs && text.length > 0 && this.heldMs < maxExtraWaitMs) {
      const waitMs = Math.min(this.policy.extraWaitMs(text), maxExtraWaitMs - this.heldMs);
      if (waitMs > 0) {
        // Hold the turn open; speech resuming (onVadStart) cancels this and the words accumulate.
        this.cancelWait();
        this.holdStartedAtMs = this.scheduler.now();
        this.timer = this.scheduler.setTimeout(() => {
          this.timer = undefined;
          this.holdStartedAtMs = undefined;
          this.finishTurn();
        }, waitMs);
        return;
      }
    }
    this.finishTurn();
  }

  private finishTurn(): void {
    const text = this.pendingText();
    this.reset();
    // "Mm-hmm" while the bot talks is listening, not a turn: answering it would cut the bot off.
    if (text.length > 0 && this.botSpeaking && this.policy.isBackchannel?.(text)) this.emit({ type: 'false-alarm' });
    else if (text.length > 0) this.emit({ type: 'user-turn', text });
    else this.emit({ type: 'false-alarm' });
  }

  private reset(): void {
    this.cancelWait();
    this.finals = [];
    this.interim = '';
    this.heldMs = 0;
  }

  private cancelWait(): void {
    this.waitingForFinal = false;
    if (this.holdStartedAtMs !== undefined) {
      this.heldMs += this.scheduler.now() - this.holdStartedAtMs;
      this.holdStartedAtMs = undefined;
    }
    if (this.timer !== undefined) {
      this.scheduler.clearTimeout(this.timer);
      this.timer = undefined;
    }
  }

  /** Words that count towards an interruption: none while they are only a backchannel. */
  private interruptingWords(): number {
    const text = this.pendingText();
    return this.policy.isBackchannel?.(text) ? 0 : wordCount(text);
  }

  private pendingText(): string {
    return [...this.finals, this.interim].filter((t) => t.length > 0).join(' ');
  }
}

function wordCount(text: string): number {
  const trimmed = text.trim();
  return trimmed.length === 0 ? 0 : trimmed.split(/\s+/).length;
}
