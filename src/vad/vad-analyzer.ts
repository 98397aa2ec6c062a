/**
 * Turns per-window speech probabilities and volumes into "caller started / stopped speaking"
 * events. Pure: no model, no clock; the caller supplies each window's probability, volume and
 * stream time, so the logic is unit-testable and its timings are in audio time, not wall time.
 *
 * The rules follow Pipecat's VADAnalyzer, whose defaults the bot configurations inherit:
 * - a window is "speech" when probability >= confidence AND smoothed volume >= min_volume;
 * - volume is exponentially smoothed (factor 0.2) before the comparison, so a single loud click
 *   cannot open the gate;
 * - start_secs and stop_secs are converted to whole windows with Math.round (0.2 s = 6 windows of
 *   32 ms, 0.8 s = 25 windows), as Pipecat does;
 * - QUIET -> STARTING on a speech window; STARTING needs start windows of uninterrupted speech to
 *   become SPEAKING (one non-speech window sends it back to QUIET); SPEAKING -> STOPPING on a
 *   non-speech window; STOPPING needs stop windows of uninterrupted non-speech to become QUIET
 *   (one speech window sends it back to SPEAKING).
 * Unlike Pipecat, which checks the counters once per incoming buffer, this checks after every
 * window, so event times are exact to the window.
 */

export interface VadAnalyzerParams {
  /** Speech probability at or above which a window can count as speech. Pipecat default 0.7. */
  confidence: number;
  /** Seconds of continuous speech before speech-start is reported. Pipecat default 0.2. */
  start_secs: number;
  /** Seconds of continuous non-speech before speech-stop is reported. Pipecat default 0.8. */
  stop_secs: number;
  /**
   * Smoothed volume (see `loudnessVolume` in audio/energy.ts: 0.6 is about -50 dBFS RMS) a window
   * needs to count as speech. Pipecat default 0.6.
   */
  min_volume: number;
}

/** Pipecat's VADParams defaults (pipecat/audio/vad/vad_analyzer.py). */
export const DEFAULT_VAD_ANALYZER_PARAMS: Readonly<VadAnalyzerParams> = Object.freeze({
  confidence: 0.7,
  start_secs: 0.2,
  stop_secs: 0.8,
  min_volume: 0.6,
});

/** Pipecat's exponential smoothing factor for volume: new = prev + 0.2 * (volume - prev). */
export const VOLUME_SMOOTHING_FACTOR = 0.2;

export type VadState = 'quiet' | 'starting' | 'speaking' | 'stopping';

export interface VadEvent {
  type: 'speech-start' | 'speech-stop';
  /** Stream time (ms of audio fed) at the end of the window that confirmed the change. */
  atMs: number;
  /**
   * Stream time at which the confirmed run began: the start of the first speech window for
   * speech-start, the start of the first non-speech window for speech-stop. atMs - sinceMs is the
   * detection delay built into start_secs / stop_secs.
   */
  sinceMs: number;
}

function validate(params: VadAnalyzerParams): void {
  const { confidence, start_secs, stop_secs, min_volume } = params;
  const check = (name: string, value: number, max: number) => {
    if (!Number.isFinite(value) || value < 0 || value > max) {
      throw new RangeError(`VAD ${name} must be between 0 and ${max}, got ${value}`);
    }
  };
  check('confidence', confidence, 1);
  check('min_volume', min_volume, 1);
  check('start_secs', start_secs, 60);
  check('stop_secs', stop_secs, 60);
}

export class VadAnalyzer {
  readonly params: Readonly<VadAnalyzerParams>;
  readonly windowMs: number;
  /** Consecutive speech windows needed for speech-start. */
  readonly startWindows: number;
  /** Consecutive non-speech windows needed for speech-stop. */
  readonly stopWindows: number;

  private currentState: VadState = 'quiet';
  private runLength = 0;
  private runStartMs = 0;
  private volume = 0;

  /**
   * @param params overrides of the Pipecat defaults
   * @param windowMs duration of one model window (32 ms for Silero at 8 kHz)
   */
  constructor(params: Partial<VadAnalyzerParams> = {}, windowMs = 32) {
    const merged = { ...DEFAULT_VAD_ANALYZER_PARAMS, ...params };
    validate(merged);
    if (!(windowMs > 0)) throw new RangeError(`windowMs must be positive, got ${windowMs}`);
    this.params = Object.freeze(merged);
    this.windowMs = windowMs;
    this.startWindows = Math.round((merged.start_secs * 1000) / windowMs);
    this.stopWindows = Math.round((merged.stop_secs * 1000) / windowMs);
  }

  get state(): VadState {
    return this.currentState;
  }

  /** True from speech-start until speech-stop (including the STOPPING grace period). */
  get speaking(): boolean {
    return this.currentState === 'speaking' || this.currentState === 'stopping';
  }

  /** The smoothed volume the last window was judged on. */
  get smoothedVolume(): number {
    return this.volume;
  }

  /**
   * True when the next window, at this raw volume, is non-speech whatever its probability: its
   * smoothed volume stays under min_volume. (Never with min_volume 0.)
   */
  isTooQuietForSpeech(volume: number): boolean {
    return this.volume + VOLUME_SMOOTHING_FACTOR * (volume - this.volume) < this.params.min_volume;
  }

  /**
   * Feeds one window's result. Returns the event it triggers, or null.
   * @param probability model speech probability 0..1
   * @param volume raw (unsmoothed) window volume 0..1
   * @param windowEndMs stream time at the end of this window
   */
  update(probability: number, volume: number, windowEndMs: number): VadEvent | null {
    this.volume += VOLUME_SMOOTHING_FACTOR * (volume - this.volume);
    const isSpeech = probability >= this.params.confidence && this.volume >= this.params.min_volume;
    const windowStartMs = windowEndMs - this.windowMs;

    switch (this.currentState) {
      case 'quiet':
        if (isSpeech) this.beginRun('starting', windowStartMs);
        break;
      case 'starting':
        if (isSpeech) this.runLength++;
        else this.currentState = 'quiet';
        break;
      case 'speaking':
        if (!isSpeech) this.beginRun('stopping', windowStartMs);
        break;
      case 'stopping':
        if (isSpeech) this.currentState = 'speaking';
        else this.runLength++;
        break;
    }

    if (this.currentState === 'starting' && this.runLength >= this.startWindows) {
      this.currentState = 'speaking';
      return { type: 'speech-start', atMs: windowEndMs, sinceMs: this.runStartMs };
    }
    if (this.currentState === 'stopping' && this.runLength >= this.stopWindows) {
      this.currentState = 'quiet';
      return { type: 'speech-stop', atMs: windowEndMs, sinceMs: this.runStartMs };
    }
    return null;
  }

  reset(): void {
    this.currentState = 'quiet';
    this.runLength = 0;
    this.runStartMs = 0;
    this.volume = 0;
  }

  private beginRun(state: 'starting' | 'stopping', startMs: number): void {
    this.currentState = state;
    this.runLength = 1;
    this.runStartMs = startMs;
  }
}
