import type { BotAudioTracker } from './bot-audio-tracker.js';
import type { TimelineKind } from './call-report.js';
import type { CallerStep, Scenario } from './scenario.js';
import { DEFAULT_WAIT_TIMEOUT_MS } from './scenario.js';

/** What the script can do on the call; the engine implements it. */
export interface ScriptHost {
  readonly bot: BotAudioTracker;
  /** Starts sending a clip; the script waits until its last frame has gone. */
  play(clip: string, nowMs: number): void;
  sendDtmf(digits: string, nowMs: number): void;
  hangup(reason: string): void;
  event(atMs: number, kind: TimelineKind, detail?: string): void;
}

/**
 * Runs the caller's steps in order, once per 20 ms tick while no clip is playing. State per
 * step is a handful of numbers, reset when the next step begins.
 */
export class CallerScript {
  private index = 0;
  private stepBeganMs: number | null = null;
  /** wait-bot-audio: when the bot audio it measures from started, once known. */
  private botAudioRefMs: number | null = null;
  /** Bot activations seen when the step began, to tell new bot audio from old. */
  private activationsAtBegin = 0;
  /** Bot activations seen when the last `play` step began (steps with `sinceLastClip`). */
  private activationsAtLastClip: number | null = null;
  /** The step before this one was a wait-bot-audio that gave up: the bot has been silent all along. */
  private afterSilentBot = false;
  private audioWaitGaveUp = false;
  private botPlayingAtBegin = false;

  private readonly steps: readonly CallerStep[];
  private readonly waitTimeoutMs: number;
  private readonly hangupAtEnd: boolean;

  constructor(scenario: Scenario) {
    this.steps = scenario.steps;
    this.waitTimeoutMs = scenario.waitTimeoutMs ?? DEFAULT_WAIT_TIMEOUT_MS;
    this.hangupAtEnd = (scenario.endOfScript ?? 'hangup') === 'hangup';
  }

  /** Runs steps until one must wait, a clip starts playing, or the script ends. */
  advance(nowMs: number, host: ScriptHost): void {
    for (;;) {
      const step = this.steps[this.index];
      if (!step) {
        if (this.hangupAtEnd) host.hangup('end of script');
        return;
      }
      if (this.stepBeganMs === null) this.begin(nowMs, host);
      const outcome = this.run(step, nowMs, host);
      if (outcome === 'waiting') return;
      this.index += 1;
      this.stepBeganMs = null;
      if (outcome === 'blocking') return;
    }
  }

  private begin(nowMs: number, host: ScriptHost): void {
    this.stepBeganMs = nowMs;
    this.afterSilentBot = this.audioWaitGaveUp;
    this.audioWaitGaveUp = false;
    this.activationsAtBegin = host.bot.activations;
    this.botPlayingAtBegin = host.bot.playing;
    this.botAudioRefMs = host.bot.playing ? host.bot.segmentStartMs : null;
  }

  /** 'done': next step now; 'blocking': next step after the clip; 'waiting': try again next tick. */
  private run(step: CallerStep, nowMs: number, host: ScriptHost): 'done' | 'blocking' | 'waiting' {
    const elapsedMs = nowMs - this.stepBeganMs!;
    switch (step.do) {
      case 'wait':
        return elapsedMs >= step.ms ? 'done' : 'waiting';
      case 'wait-until':
        return nowMs >= step.atMs ? 'done' : 'waiting';
      case 'wait-bot-audio': {
        const bot = host.bot;
        if (this.botAudioRefMs === null && bot.activations > this.activationsSince(step))
          this.botAudioRefMs = bot.lastActivationMs;
        if (this.botAudioRefMs !== null && nowMs >= this.botAudioRefMs + (step.thenMs ?? 0)) return 'done';
        if (!this.timedOut(step, elapsedMs, nowMs, host)) return 'waiting';
        this.audioWaitGaveUp = this.botAudioRefMs === null;
        return 'done';
      }
      case 'wait-bot-silence': {
        const bot = host.bot;
        const heard = this.botPlayingAtBegin || bot.activations > this.activationsSince(step);
        if (heard && !bot.playing && bot.idleSinceMs !== null && nowMs - bot.idleSinceMs >= step.ms) return 'done';
        // Waiting for the end of audio that never came would only wait out another timeout.
        if (!heard && !bot.playing && this.afterSilentBot) return 'done';
        return this.timedOut(step, elapsedMs, nowMs, host) ? 'done' : 'waiting';
      }
      case 'play':
        this.activationsAtLastClip = host.bot.activations;
        host.play(step.clip, nowMs);
        return 'blocking';
      case 'dtmf':
        host.sendDtmf(step.digits, nowMs);
        return 'done';
      case 'hangup':
        host.hangup('hangup step');
        return 'blocking';
    }
  }

  /** The activation count that bot audio must exceed to count as new for this wait step. */
  private activationsSince(step: { sinceLastClip?: boolean }): number {
    return step.sinceLastClip && this.activationsAtLastClip !== null
      ? this.activationsAtLastClip
      : this.activationsAtBegin;
  }

  private timedOut(
    step: { do: string; timeoutMs?: number },
    elapsedMs: number,
    nowMs: number,
    host: ScriptHost,
  ): boolean {
    const limitMs = step.timeoutMs ?? this.waitTimeoutMs;
    if (elapsedMs < limitMs) return false;
    host.event(nowMs, 'wait-timeout', `${step.do} step ${this.index + 1} gave up after ${Math.round(elapsedMs)} ms`);
    return true;
  }
}
