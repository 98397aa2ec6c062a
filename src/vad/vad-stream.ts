/**
 * One call's voice activity detection: 20 ms frames of 8 kHz audio in, speech-start /
 * speech-stop out, with times in ms of audio fed (stream time).
 *
 * Wires SileroVad (probabilities) to VadAnalyzer (state machine); each model window's volume is
 * measured on the same 256 samples the model saw, as Pipecat does.
 *
 * A window too soft for either judge (its own volume under min_volume, so no suspicion; its
 * smoothed volume too, so no speech), while no suspicion is open, is not run through the model:
 * whatever the model said, every decision would be the same. SileroVad replays such windows
 * before the next one it runs.
 */

import type { InferenceSession } from 'onnxruntime-node';
import { loudnessVolume } from '../audio/energy.js';
import { decodeMulaw } from '../audio/mulaw.js';
import { SETTLED, SileroVad } from './silero.js';
import { SpeechSuspicion, type SuspicionDecision } from './speech-suspicion.js';
import type { SileroBatcher } from './silero-batcher.js';
import { VadAnalyzer, type VadAnalyzerParams, type VadEvent, type VadState } from './vad-analyzer.js';

export interface VadWindowInfo {
  /** 0 for a quiet window that was not run (`ran` false). */
  probability: number;
  ran: boolean;
  /** Unsmoothed volume of the window (0..1, see loudnessVolume). */
  volume: number;
  state: VadState;
  windowEndMs: number;
}

export interface VadStreamEvents {
  onSpeechStart?(event: VadEvent): void;
  onSpeechStop?(event: VadEvent): void;
  /** Speech is plausible but not confirmed yet (see speech-suspicion.ts); stream time of the window. */
  onSpeechSuspected?(atMs: number): void;
  /** The suspicion ended without speech-start: noise, a cough. */
  onSpeechDismissed?(atMs: number): void;
  /** Each decision of the speech suspicion (see SuspicionDecision), with its window; for the debug log. */
  onSuspicionDecision?(decision: SuspicionDecision & { probability: number; volume: number; atMs: number }): void;
  /** Every model window (about every 32 ms); for metrics and tests. Keep it cheap. */
  onWindow?(info: VadWindowInfo): void;
  /**
   * A model load or run failure. When set, push() never rejects, so fire-and-forget callers
   * cannot leak an unhandled rejection; when unset, push() rejects with the error.
   */
  onError?(error: unknown): void;
}

export interface VadStreamOptions {
  /** An onnxruntime session to run the windows on instead of the TypeScript network (see SileroVadOptions.session). */
  session?: InferenceSession | Promise<InferenceSession>;
  /** Where the windows run (see SileroVadOptions.batcher). */
  batcher?: SileroBatcher;
  /** Run every window, quiet or not (default false): for comparisons. */
  runQuietWindows?: boolean;
}

export class VadStream {
  readonly analyzer: VadAnalyzer;
  private readonly suspicion: SpeechSuspicion;
  private readonly vad: SileroVad;
  private readonly events: VadStreamEvents;
  private readonly msPerSample: number;
  private mulawScratch = new Int16Array(160);
  /** The volume isQuiet measured for the window onWindow reports next (SileroVad asks, then reports, in turn). */
  private quietCheckVolume: number | undefined;
  /** Stream time at the end of the window being judged. */
  private windowEndMs = 0;
  private disposed = false;

  constructor(params: Partial<VadAnalyzerParams> = {}, events: VadStreamEvents = {}, options: VadStreamOptions = {}) {
    this.events = events;
    this.vad = new SileroVad({
      sampleRateHz: 8000,
      onWindow: (probability, window, windowEndSample, ran) => this.onWindow(probability, window, windowEndSample, ran),
      ...(options.runQuietWindows ? {} : { isQuiet: (window: Int16Array) => this.isQuiet(window) }),
      ...(options.session ? { session: options.session } : {}),
      ...(options.batcher ? { batcher: options.batcher } : {}),
    });
    this.msPerSample = 1000 / this.vad.sampleRateHz;
    this.analyzer = new VadAnalyzer(params, this.vad.windowSamples * this.msPerSample);
    const onDecision = events.onSuspicionDecision;
    this.suspicion = new SpeechSuspicion(
      this.analyzer.params,
      this.analyzer.startWindows,
      onDecision &&
        ((decision, probability, volume) => onDecision({ ...decision, probability, volume, atMs: this.windowEndMs })),
    );
  }

  get state(): VadState {
    return this.analyzer.state;
  }

  /** Ms of audio fed so far. */
  get streamMs(): number {
    return this.vad.samplesFed * this.msPerSample;
  }

  /**
   * Feeds 8 kHz PCM (normally one 20 ms frame). Events fire, in order, as windows complete; the
   * returned promise settles after the windows this push completed have been handled. On the
   * network in this thread they are handled before push returns, and it returns SETTLED.
   */
  push(pcm: Int16Array): Promise<void> {
    if (this.disposed) return SETTLED;
    return this.report(this.vad.push(pcm));
  }

  /** Feeds 8 kHz mu-law as received from the carrier. */
  pushMulaw(bytes: Uint8Array): Promise<void> {
    if (this.disposed) return SETTLED;
    if (this.mulawScratch.length < bytes.length) this.mulawScratch = new Int16Array(bytes.length);
    // SileroVad copies the samples synchronously, so the scratch buffer can be reused at once.
    return this.report(this.vad.push(decodeMulaw(bytes, this.mulawScratch)));
  }

  /** Stops reporting events; windows still queued are dropped. */
  dispose(): void {
    this.disposed = true;
    this.vad.reset();
  }

  private report(run: Promise<void>): Promise<void> {
    const onError = this.events.onError;
    if (!onError || run === SETTLED) return run;
    return run.catch((error: unknown) => {
      if (!this.disposed) onError(error);
    });
  }

  /**
   * Neither the suspicion (own volume) nor the analyzer (smoothed volume) could count it as speech,
   * and no suspicion is open or waiting to re-arm: a quiet window inside a suspected onset (the gap
   * before the next syllable) may be "likely" to the model, which keeps the suspicion alive.
   */
  private isQuiet(window: Int16Array): boolean {
    this.quietCheckVolume = undefined;
    if (!this.suspicion.atRest) return false;
    const volume = loudnessVolume(window);
    this.quietCheckVolume = volume;
    return volume < this.analyzer.params.min_volume && this.analyzer.isTooQuietForSpeech(volume);
  }

  private onWindow(probability: number, window: Int16Array, windowEndSample: number, ran: boolean): void {
    if (this.disposed) return;
    const volume = this.quietCheckVolume ?? loudnessVolume(window);
    this.quietCheckVolume = undefined;
    const windowEndMs = windowEndSample * this.msPerSample;
    this.windowEndMs = windowEndMs;
    const event = this.analyzer.update(probability, volume, windowEndMs);
    this.events.onWindow?.({ probability, ran, volume, state: this.analyzer.state, windowEndMs });
    if (event?.type === 'speech-start') {
      this.suspicion.confirmed();
      this.events.onSpeechStart?.(event);
    } else if (event?.type === 'speech-stop') this.events.onSpeechStop?.(event);
    else if (!this.analyzer.speaking) {
      const suspicion = this.suspicion.update(probability, volume);
      if (suspicion === 'suspected') this.events.onSpeechSuspected?.(windowEndMs);
      else if (suspicion === 'dismissed') this.events.onSpeechDismissed?.(windowEndMs);
    }
  }
}
