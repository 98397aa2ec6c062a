import type { Logger } from 'pino';
import type { ClockTimer } from '../shared/clock.js';
import type { CallMetrics } from './call-metrics.js';
import type { Playout } from './playout.js';

/**
 * A reply paused on suspected speech resumes by itself after this long if nothing settled it
 * (the speech was neither confirmed nor dismissed, and the caller is not speaking): a stuck VAD
 * must not silence the bot for good.
 */
export const MAX_PAUSE_MS = 2000;

export interface BargeInPauseDeps {
  playout: Playout;
  metrics: CallMetrics;
  log: () => Logger;
  /** The caller is speaking (or their turn is still being decided): a pause then waits on. */
  callerSpeaking: () => boolean;
}

/**
 * The first step of barge-in, the same for every engine: at the first windows of plausible speech
 * over the bot, the line is cleared at once and the reply's audio waits in Playout behind the part
 * the caller has not heard (`pause`). Then either the engine confirms an interruption (the reply
 * ends; `cancel` stops the safety timer) or it was not one (`resume`: the reply plays on from the
 * heard point). A pause nothing settles resumes after MAX_PAUSE_MS.
 */
export class BargeInPause {
  private timer: ClockTimer | undefined;
  /** The current pause silenced audio the caller could hear (rather than holding a reply between sentences). */
  private silenced = false;

  constructor(private readonly deps: BargeInPauseDeps) {}

  get paused(): boolean {
    return this.deps.playout.paused;
  }

  /**
   * Suspected speech while a reply is in progress: silence it now. Between two sentences nothing
   * may be audible, but the next is on its way: it is held too, or it would start over the caller
   * and play on until start_secs confirmed the speech. Only a pause that silenced audible audio
   * counts in the call's pauses and resumes.
   */
  pause(): 'paused' | 'held' | 'not paused: already paused' {
    const { playout } = this.deps;
    const audible = playout.audible;
    const heardMs = playout.pause();
    if (heardMs === undefined) {
      this.deps.log().debug({ skipped: 'already paused' }, 'speech suspected: bot not paused');
      return 'not paused: already paused';
    }
    this.silenced = audible;
    if (audible) this.deps.metrics.paused();
    this.arm();
    this.deps.log().debug({ heardMs, audible }, 'speech suspected: bot paused');
    return audible ? 'paused' : 'held';
  }

  /** It was not an interruption: play on from the first unheard word. */
  resume(cause: string): void {
    const { playout } = this.deps;
    if (!playout.paused) return;
    this.cancel();
    playout.resume();
    if (this.silenced) this.deps.metrics.resumed();
    this.deps.log().debug({ cause, heardMs: playout.heardMs() }, 'not an interruption: bot resumed');
  }

  /** The pause is settled otherwise (the reply ended): stop the safety timer. */
  cancel(): void {
    this.deps.metrics.clock.clearTimeout(this.timer);
    this.timer = undefined;
  }

  private arm(): void {
    const { clock } = this.deps.metrics;
    clock.clearTimeout(this.timer);
    this.timer = clock.setTimeout(() => this.onTimeout(), MAX_PAUSE_MS);
  }

  private onTimeout(): void {
    this.timer = undefined;
    if (!this.deps.playout.paused) return;
    if (this.deps.callerSpeaking()) this.arm();
    else this.resume('timeout');
  }
}
