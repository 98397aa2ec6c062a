/**
 * Per-call Silero VAD stream: turns 20 ms PCM frames into speech probabilities.
 *
 * The model consumes fixed windows (256 new samples at 8 kHz = 32 ms) with the previous window's
 * last 32 samples prepended as context, and carries a recurrent state [2,1,128] between windows.
 * Frames (160 samples) do not divide windows, so samples are buffered and the model runs whenever
 * a full window is ready (about every other frame).
 *
 * Samples wait in a ring buffer, bounded (maxPendingMs) and never shifted: taking a window copies
 * its 256 samples out and moves the read position, so the work per window is the same however much
 * is waiting. If the model falls behind by more than the bound (an overloaded server), the oldest
 * audio is dropped (counted in samplesDropped): the VAD stays current, and memory stays bounded.
 * When a window is ready it goes to the process's batcher, which runs the windows of all calls
 * together.
 */

import type { InferenceSession } from 'onnxruntime-node';
import { type SileroBatcher, sileroBatcher } from './silero-batcher.js';
import { getSileroSession, SILERO_GEOMETRY, SILERO_STATE_SIZE, type SileroSampleRateHz } from './silero-model.js';

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
  session?: InferenceSession | Promise<InferenceSession>;
  /**
   * Where windows are run instead of `session`: e.g. workerSileroBatcher(), which runs them in a
   * worker thread. Defaults to the batcher of `session`.
   */
  batcher?: SileroBatcher;
  /** Most audio kept waiting for the model, ms; older audio is dropped. Default 3000. */
  maxPendingMs?: number;
}

/**
 * Above the 2 s burst a media stream may deliver at once (audio-rate-limit.ts), so a carrier's
 * catch-up after a network stall is analysed, not dropped.
 */
const DEFAULT_MAX_PENDING_MS = 3000;

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
  /** Ring of samples received but not yet run through the model (less than two windows in practice). */
  private pending: Int16Array;
  /** Index in `pending` of the oldest waiting sample. */
  private pendingStart = 0;
  private pendingLength = 0;
  /** The ring grows (doubling) up to this, then the oldest samples are dropped. */
  readonly maxPendingSamples: number;
  /** The window being run, copied out of the ring. */
  private readonly window: Int16Array;
  private dropped = 0;
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
    this.window = new Int16Array(geometry.windowSamples);
    const maxPendingMs = options.maxPendingMs ?? DEFAULT_MAX_PENDING_MS;
    this.maxPendingSamples = Math.max(geometry.windowSamples, Math.round((maxPendingMs * sampleRateHz) / 1000));
    this.pending = new Int16Array(Math.min(geometry.windowSamples * 4, this.maxPendingSamples));
  }

  /** Total samples pushed since creation or the last reset; stream time is this / sampleRateHz. */
  get samplesFed(): number {
    return this.fed;
  }

  /** Windows run through the model since creation or the last reset. */
  get windowsProcessed(): number {
    return this.processed;
  }

  /** Samples waiting for the model. */
  get pendingSamples(): number {
    return this.pendingLength;
  }

  /** Samples the ring can hold before it grows (never more than maxPendingSamples). */
  get pendingCapacity(): number {
    return this.pending.length;
  }

  /** Samples dropped unanalysed because the model had fallen maxPendingMs behind. */
  get samplesDropped(): number {
    return this.dropped;
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
    this.pendingStart = 0;
    this.pendingLength = 0;
    this.fed = 0;
    this.processed = 0;
    this.lastProbability = 0;
    this.state.fill(0);
    this.input.fill(0);
  }

  private append(samples: Int16Array): void {
    const max = this.maxPendingSamples;
    let input = samples;
    if (input.length > max) {
      this.dropOldest(this.pendingLength);
      this.dropped += input.length - max;
      input = input.subarray(input.length - max);
    }
    const overflow = this.pendingLength + input.length - max;
    if (overflow > 0) this.dropOldest(overflow);
    const required = this.pendingLength + input.length;
    if (required > this.pending.length) this.grow(Math.min(max, Math.max(required, this.pending.length * 2)));
    // Write after the newest sample, wrapping at the end of the ring.
    const capacity = this.pending.length;
    const writeAt = (this.pendingStart + this.pendingLength) % capacity;
    const first = Math.min(input.length, capacity - writeAt);
    this.pending.set(input.subarray(0, first), writeAt);
    if (first < input.length) this.pending.set(input.subarray(first), 0);
    this.pendingLength = required;
  }

  private dropOldest(count: number): void {
    this.pendingStart = (this.pendingStart + count) % this.pending.length;
    this.pendingLength -= count;
    this.dropped += count;
  }

  /** A bigger ring, with the waiting samples unwrapped at its start. Rare: at most log2(max/initial) times. */
  private grow(capacity: number): void {
    const grown = new Int16Array(capacity);
    const first = Math.min(this.pendingLength, this.pending.length - this.pendingStart);
    grown.set(this.pending.subarray(this.pendingStart, this.pendingStart + first), 0);
    grown.set(this.pending.subarray(0, this.pendingLength - first), first);
    this.pending = grown;
    this.pendingStart = 0;
  }

  /** Copies the oldest window out of the ring into `window` and moves past it. */
  private takeWindow(): Int16Array {
    const size = this.windowSamples;
    const capacity = this.pending.length;
    const first = Math.min(size, capacity - this.pendingStart);
    this.window.set(this.pending.subarray(this.pendingStart, this.pendingStart + first), 0);
    if (first < size) this.window.set(this.pending.subarray(0, size - first), first);
    this.pendingStart = (this.pendingStart + size) % capacity;
    this.pendingLength -= size;
    return this.window;
  }

  private async drain(generation: number): Promise<void> {
    const size = this.windowSamples;
    while (this.pendingLength >= size && generation === this.generation) {
      // Position of this window's end: everything fed minus what is still queued after it.
      const windowEndSample = this.fed - (this.pendingLength - size);
      // Taken before the run, so a failing model cannot grow the buffer, and audio dropped while
      // the window is in flight is never this one. Windows of a stream run one at a time.
      const window = this.takeWindow();
      const probability = await this.runWindow(window, generation);
      if (generation !== this.generation) return;
      this.processed++;
      this.lastProbability = probability;
      this.onWindow?.(probability, window, windowEndSample);
    }
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
