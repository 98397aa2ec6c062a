/**
 * Per-call Silero VAD stream: turns 20 ms PCM frames into speech probabilities.
 *
 * The model consumes fixed windows (256 new samples at 8 kHz = 32 ms) with the previous window's
 * last 32 samples prepended as context, and carries a recurrent state [2,1,128] between windows.
 * Frames (160 samples) do not divide windows, so samples are buffered and the model runs whenever
 * a full window is ready (about every other frame).
 *
 * All buffers are allocated once per stream; the per-frame path only copies samples and, when a
 * window is ready, hands it to the process's batcher, which runs the windows of all calls together.
 */

import * as ort from 'onnxruntime-node';
import { type SileroBatcher, sileroBatcher } from './silero-batcher.js';
import {
  getSileroSession,
  SILERO_GEOMETRY,
  SILERO_STATE_SIZE,
  type SileroSampleRateHz,
} from './silero-model.js';

/**
 * Called once per model window, in stream order.
 * @param probability speech probability 0..1 for the window
 * @param window the window's new samples; a view into an internal buffer, valid only during the call
 * @param windowEndSample stream position (samples fed so far) at the end of the window
 */
export type SileroWindowListener = (probability: number, window: Int16Array, windowEndSample: number) => void;

export interface SileroVadOptions {
  /** 8000 (default, telephony) or 16000. */
  sampleRateHz?: SileroSampleRateHz;
  onWindow?: SileroWindowListener;
  /** The model session; defaults to the process-wide shared one (loaded on first use). */
  session?: ort.InferenceSession | Promise<ort.InferenceSession>;
  /**
   * Where windows are run instead of `session`: e.g. workerSileroBatcher(), which runs them in a
   * worker thread. Defaults to the batcher of `session`.
   */
  batcher?: SileroBatcher;
}

const INT16_SCALE = 1 / 32768;

export class SileroVad {
  readonly sampleRateHz: SileroSampleRateHz;
  readonly windowSamples: number;
  readonly contextSamples: number;

  /** Set once the session promise settles; until then runs wait on `batcherReady`. */
  private batcher: SileroBatcher | null = null;
  private readonly batcherReady: Promise<SileroBatcher>;
  private readonly onWindow: SileroWindowListener | undefined;
  /** Model input: context followed by the window, scaled to -1..1. */
  private readonly input: Float32Array;
  private readonly state = new Float32Array(SILERO_STATE_SIZE);
  /** Samples received but not yet run through the model (less than two windows in practice). */
  private pending: Int16Array;
  private pendingLength = 0;
  private fed = 0;
  private processed = 0;
  private lastProbability = 0;
  /** Serialises model runs so windows are processed in order even if pushes are not awaited. */
  private queue: Promise<void> = Promise.resolve();
  /** Bumped by reset() so that runs queued before a reset do not touch the new stream's state. */
  private generation = 0;

  /** Creates a stream once the model is loaded, so a load failure surfaces here. */
  static async create(options: SileroVadOptions = {}): Promise<SileroVad> {
    if (options.batcher) return new SileroVad(options);
    const session = await (options.session ?? getSileroSession());
    return new SileroVad({ ...options, session });
  }

  /**
   * Usable at once: frames pushed while the shared model is still loading are buffered and run
   * when it is ready. A load failure rejects the pushes that needed the model.
   */
  constructor(options: SileroVadOptions = {}) {
    const sampleRateHz = options.sampleRateHz ?? 8000;
    const geometry = SILERO_GEOMETRY[sampleRateHz];
    if (!geometry) throw new RangeError(`Silero VAD supports 8000 or 16000 Hz, got ${sampleRateHz}`);
    this.batcherReady = options.batcher
      ? Promise.resolve(options.batcher)
      : Promise.resolve(options.session ?? getSileroSession()).then((session) => sileroBatcher(session, sampleRateHz));
    this.batcherReady.then(
      (batcher) => {
        this.batcher = batcher;
      },
      () => undefined, // reported through the pushes that await it
    );
    this.sampleRateHz = sampleRateHz;
    this.windowSamples = geometry.windowSamples;
    this.contextSamples = geometry.contextSamples;
    this.onWindow = options.onWindow;
    this.input = new Float32Array(geometry.contextSamples + geometry.windowSamples);
    this.pending = new Int16Array(geometry.windowSamples * 4);
  }

  /** Total samples pushed since creation or the last reset; stream time is this / sampleRateHz. */
  get samplesFed(): number {
    return this.fed;
  }

  /** Windows run through the model since creation or the last reset. */
  get windowsProcessed(): number {
    return this.processed;
  }

  /** Probability of the most recent window (0 before the first one). */
  get probability(): number {
    return this.lastProbability;
  }

  /**
   * Adds samples (any length, usually one 20 ms frame) and runs the model on every window they
   * complete. The samples are copied before this returns, so the caller may reuse its buffer.
   * Resolves once those windows have been processed and reported to `onWindow`.
   */
  push(samples: Int16Array): Promise<void> {
    this.append(samples);
    this.fed += samples.length;
    if (this.pendingLength < this.windowSamples) return this.queue;
    const generation = this.generation;
    const run = this.queue.then(() => this.drain(generation));
    // A failed run rejects this push only; later pushes still run.
    this.queue = run.catch(() => undefined);
    return run;
  }

  /** Forgets audio, context and recurrent state, e.g. between independent utterances in tests. */
  reset(): void {
    this.generation++;
    this.pendingLength = 0;
    this.fed = 0;
    this.processed = 0;
    this.lastProbability = 0;
    this.state.fill(0);
    this.input.fill(0);
  }

  private append(samples: Int16Array): void {
    const required = this.pendingLength + samples.length;
    if (required > this.pending.length) {
      const grown = new Int16Array(Math.max(required, this.pending.length * 2));
      grown.set(this.pending.subarray(0, this.pendingLength), 0);
      this.pending = grown;
    }
    this.pending.set(samples, this.pendingLength);
    this.pendingLength = required;
  }

  private async drain(generation: number): Promise<void> {
    const size = this.windowSamples;
    while (this.pendingLength >= size && generation === this.generation) {
      let probability: number;
      try {
        probability = await this.runWindow(this.pending, generation);
      } catch (error) {
        // Drop the failed window so a persistently failing model cannot grow the buffer.
        if (generation === this.generation) this.consumeWindow();
        throw error;
      }
      if (generation !== this.generation) return;
      this.processed++;
      this.lastProbability = probability;
      try {
        if (this.onWindow) {
          // Position of this window's end: everything fed minus what is still queued after it.
          const windowEndSample = this.fed - (this.pendingLength - size);
          this.onWindow(probability, this.pending.subarray(0, size), windowEndSample);
        }
      } finally {
        this.consumeWindow();
      }
    }
  }

  private consumeWindow(): void {
    this.pending.copyWithin(0, this.windowSamples, this.pendingLength);
    this.pendingLength -= this.windowSamples;
  }

  private async runWindow(window: Int16Array, generation: number): Promise<number> {
    const input = this.input;
    const context = this.contextSamples;
    const size = this.windowSamples;
    for (let i = 0; i < size; i++) input[context + i] = window[i]! * INT16_SCALE;

    const batcher = this.batcher ?? (await this.batcherReady);
    // Windows of every call on this batcher run together; the state is updated in place.
    const probability = await batcher.infer(input, this.state);
    if (generation !== this.generation) {
      // Reset while the window was in flight: the batch wrote its (stale) state back on completion.
      // Runs are serialised per stream, so no window of the new generation has run yet.
      this.state.fill(0);
      return 0;
    }
    // The next window's context is the tail of this one.
    input.copyWithin(0, size, context + size);
    return probability;
  }
}
