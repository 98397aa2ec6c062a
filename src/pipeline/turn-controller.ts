/**
 * Decides when the caller's turn ends and when the caller has really interrupted the bot.
 * A pure state machine: VAD and STT events in, decisions out, time from an injected scheduler:
 * the call's clock (shared/clock.ts), or the process's timers, which unit tests fake.
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
  /** VAD saw the end of speech and the STT has not finalised all of it: ask it to finalise now. */
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
  /** Where the STT's finals reach, on the call's audio clock (ms); undefined while it has not said. */
  private coveredToMs: number | undefined;
  /** Where the caller's speech ended (VAD stop), on the same clock; undefined when not known. */
  private speechEndMs: number | undefined;
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
   * VAD saw stop_secs of silence after speech that ended at `speechEndMs` (call audio ms).
   *
   * The turn's text is complete when the STT's finals cover the audio up to there: its own
   * endpointing already finalised everything (a caller who paused, then stopped). The turn ends
   * at once; Finalize would have nothing to answer with, and Deepgram, for one, then sends
   * nothing at all.
   *
   * Otherwise speech after the last final (or any speech, when the STT does not say what its
   * finals cover) may hold words no final has shown yet: ask the STT to finalise, and end the
   * turn on the final that covers the speech (any final, when coverage is unknown), or after
   * finalTranscriptWaitMs with what is in hand. Without Finalize those words would come only at
   * the STT's own end-of-speech, as a second turn that cuts off the answer to the first.
   */
  onVadStop(speechEndMs?: number): void {
    if (!this.userSpeaking) return;
    this.userSpeaking = false;
    this.speechEndMs = speechEndMs;
    if (this.textComplete()) {
      this.endCompleteTurn();
      return;
    }
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

  /** A final transcript; `coveredToMs`: how far the STT's finals now reach (call audio ms), when it says. */
  onFinal(text: string, coveredToMs?: number): void {
    const trimmed = text.trim();
    this.interim = '';
    if (trimmed.length > 0) this.finals.push(trimmed);
    if (coveredToMs !== undefined) this.coveredToMs = Math.max(this.coveredToMs ?? 0, coveredToMs);
    if (this.userSpeaking) {
      if (this.policy.minInterruptionWords > 0 && this.interruptingWords() >= this.policy.minInterruptionWords)
        this.maybeBargeIn();
      return;
    }
    if (this.waitingForFinal) {
      if (this.speechEndMs !== undefined && this.coveredToMs !== undefined) {
        // An earlier stretch finalised (endpointing in a pause): the rest is still to come.
        if (this.textComplete()) this.endCompleteTurn();
      } else if (this.finals.length > 0) this.endTurn();
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

  /** The STT's finals reach the end of the caller's speech: no word of it is still to come. */
  private textComplete(): boolean {
    // An interim after the last final: the STT hears words beyond it.
    if (this.interim.length > 0) return false;
    return this.speechEndMs !== undefined && this.coveredToMs !== undefined && this.coveredToMs >= this.speechEndMs;
  }

  /** Every word of the turn is in hand: answer it, or, with none (a cough the STT heard as nothing), drop it. */
  private endCompleteTurn(): void {
    this.cancelWait();
    if (this.pendingText().length > 0) this.endTurn();
    else {
      this.reset();
      this.emit({ type: 'false-alarm' });
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
