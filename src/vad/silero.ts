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
 * When a window is ready it runs at once, before push returns, on the network in this thread
 * (SileroBatcher.runNow); on a runner that needs a turn of the event loop (onnxruntime, the
 * tests' reference), it goes to the process's batcher, which runs the windows of all calls
 * together.
 *
 * Quiet windows (`isQuiet`: too soft to count as speech whatever the model says, see
 * vad-stream.ts) are not run: most of a call's windows are the caller listening to the bot, and
 * inference is the VAD's whole cost. The model is recurrent, though, and its state never settles
 * (docs/cost-per-call.md), so a skipped window is kept: the next window that is run first replays
 * the quiet ones before it, up to QUIET_REPLAY_WINDOWS of them, in one request. A quiet stretch
 * up to that long (pauses between words and phrases) therefore leaves exactly the state and
 * probabilities of running every window; after a longer one the model resumes as if the
 * stretch had been that long.
 */

import type { InferenceSession } from 'onnxruntime-node';
import { type SileroBatcher, sileroBatcher } from './silero-batcher.js';
import { SILERO_GEOMETRY, SILERO_STATE_SIZE, type SileroSampleRateHz } from './silero-model.js';
import { networkSileroBatcher } from './silero-network.js';

/**
 * Called once per model window, in stream order.
 * @param probability speech probability 0..1 for the window
 * @param window the window's new samples; a view into an internal buffer, valid only during the call
 * @param windowEndSample stream position (samples fed so far) at the end of the window
 */
export type SileroWindowListener = (
  probability: number,
  window: Int16Array,
  windowEndSample: number,
  /** False for a quiet window that was not run (its probability is reported as 0). */
  ran: boolean,
) => void;

/**
 * Quiet windows replayed, at most, before the next window that is run: one second. Pauses inside
 * speech are shorter, so they are replayed whole; longer silences (the caller listening) are
 * where the saving is. Measured on the fixtures with 0.5 to 5 s of silence or line noise around
 * speech (docs/cost-per-call.md): speech starts came at the same window or one earlier in 190
 * of 192 cases, one window (32 ms) later in 2.
 */
export const QUIET_REPLAY_WINDOWS = 31;

export interface SileroVadOptions {
  /** 8000 (default, telephony) or 16000. */
  sampleRateHz?: SileroSampleRateHz;
  onWindow?: SileroWindowListener;
  /**
   * An onnxruntime session of the model to run the windows on instead of the TypeScript network
   * (the reference the tests and benchmarks compare it with).
   */
  session?: InferenceSession | Promise<InferenceSession>;
  /**
   * Where windows are run. Defaults to the batcher of `session` if given, else to the process-wide
   * batcher on the TypeScript network (silero-network.ts).
   */
  batcher?: SileroBatcher;
  /** Most audio kept waiting for the model, ms; older audio is dropped. Default 3000. */
  maxPendingMs?: number;
  /**
   * Called with each window before it is run, in stream order after the previous window was
   * reported: true means the window's probability cannot matter, so it is not run (see the
   * file's comment). Default: every window is run.
   */
  isQuiet?: (window: Int16Array) => boolean;
}

/**
 * Above the 2 s burst a media stream may deliver at once (audio-rate-limit.ts), so a carrier's
 * catch-up after a network stall is analysed, not dropped.
 */
const DEFAULT_MAX_PENDING_MS = 3000;

const INT16_SCALE = 1 / 32768;

/**
 * What a push returns when its windows have all been handled before it returns: one promise for
 * every such push, so a caller can tell (`=== SETTLED`) that there is nothing to wait for or catch.
 */
export const SETTLED: Promise<void> = Promise.resolve();

export class SileroVad {
  readonly sampleRateHz: SileroSampleRateHz;
  readonly windowSamples: number;
  readonly contextSamples: number;

  /** The batcher given, or once the session promise settles; until then runs wait on `batcherReady`. */
  private batcher: SileroBatcher | null = null;
  private readonly batcherReady: Promise<SileroBatcher>;
  private readonly onWindow: SileroWindowListener | undefined;
  private readonly isQuiet: ((window: Int16Array) => boolean) | undefined;
  /**
   * Every window is taken out of the pending ring into the next slot of this ring, the slot of
   * quiet window `quietRun`: a quiet window is then kept as it came (16-bit samples, no row built),
   * and when a window is run, the quiet ones before it are made into the model's rows then
   * (replayRows), each with its context, the tail of the window before it. Slots for the windows
   * replayed, the one before them and the one being run. `slots` are views of it, one per window.
   */
  private readonly quietWindows: Int16Array;
  private readonly slots: Int16Array[];
  /** Quiet windows skipped since the last run (may exceed the ring: only the newest are kept). */
  private quietRun = 0;
  private skipped = 0;
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
  private dropped = 0;
  private fed = 0;
  private processed = 0;
  private lastProbability = 0;
  /** Serialises model runs so windows are processed in order even if pushes are not awaited. */
  private queue: Promise<void> = SETTLED;
  /** Pushes whose windows wait for, or are in, an asynchronous run. */
  private inFlight = 0;
  /** Bumped by reset() so that runs queued before a reset do not touch the new stream's state. */
  private generation = 0;

  /** Creates a stream once the model is loaded, so a load failure surfaces here. */
  static async create(options: SileroVadOptions = {}): Promise<SileroVad> {
    if (options.batcher) return new SileroVad(options);
    if (options.session) return new SileroVad({ ...options, session: await options.session });
    return new SileroVad({ ...options, batcher: networkSileroBatcher(options.sampleRateHz ?? 8000) });
  }

  /**
   * Usable at once: frames pushed while the shared model is still loading are buffered and run
   * when it is ready. A load failure rejects the pushes that needed the model.
   */
  constructor(options: SileroVadOptions = {}) {
    const sampleRateHz = options.sampleRateHz ?? 8000;
    const geometry = SILERO_GEOMETRY[sampleRateHz];
    if (!geometry) throw new RangeError(`Silero VAD supports 8000 or 16000 Hz, got ${sampleRateHz}`);
    const { batcher, session } = options;
    // Given, it is there for the first push (which then runs at once on a runner in this thread).
    this.batcher = batcher ?? null;
    this.batcherReady = batcher
      ? Promise.resolve(batcher)
      : session
        ? Promise.resolve(session).then((loaded) => sileroBatcher(loaded, sampleRateHz))
        : // Built on first use; a model that fails to load rejects here, not in the constructor.
          Promise.resolve().then(() => networkSileroBatcher(sampleRateHz));
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
    this.isQuiet = options.isQuiet;
    this.input = new Float32Array(geometry.contextSamples + geometry.windowSamples);
    this.quietWindows = new Int16Array((QUIET_REPLAY_WINDOWS + 2) * geometry.windowSamples);
    this.slots = Array.from({ length: QUIET_REPLAY_WINDOWS + 2 }, (_, slot) =>
      this.quietWindows.subarray(slot * geometry.windowSamples, (slot + 1) * geometry.windowSamples),
    );
    const maxPendingMs = options.maxPendingMs ?? DEFAULT_MAX_PENDING_MS;
    this.maxPendingSamples = Math.max(geometry.windowSamples, Math.round((maxPendingMs * sampleRateHz) / 1000));
    this.pending = new Int16Array(Math.min(geometry.windowSamples * 4, this.maxPendingSamples));
  }

  /** Total samples pushed since creation or the last reset; stream time is this / sampleRateHz. */
  get samplesFed(): number {
    return this.fed;
  }

  /** Windows reported (run through the model or skipped as quiet) since creation or the last reset. */
  get windowsProcessed(): number {
    return this.processed;
  }

  /** Of those, quiet windows that were not run when they came (some were replayed later). */
  get windowsSkipped(): number {
    return this.skipped;
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
    // On a runner in this thread, with nothing of this stream in flight, the windows run now and
    // the push returns SETTLED (see SileroBatcher.runNow).
    const runNow = this.inFlight === 0 ? this.batcher?.runNow : undefined;
    if (runNow) return this.drainNow(runNow);
    if (this.pendingLength < this.windowSamples) return this.inFlight === 0 ? SETTLED : this.queue;
    const generation = this.generation;
    this.inFlight++;
    const run = this.queue.then(() => this.drain(generation)).finally(() => this.inFlight--);
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
    this.skipped = 0;
    this.quietRun = 0;
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
    if (first === input.length) this.pending.set(input, writeAt);
    else {
      this.pending.set(input.subarray(0, first), writeAt);
      this.pending.set(input.subarray(first), 0);
    }
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

  /** Copies the oldest window out of the pending ring into the next quiet slot (see quietWindows) and moves past it. */
  private takeWindow(): Int16Array {
    const size = this.windowSamples;
    const pending = this.pending;
    const capacity = pending.length;
    const window = this.slots[this.quietRun % this.slots.length]!;
    // By hand rather than set(): no view of the ring to make for each window.
    let from = this.pendingStart;
    for (let i = 0; i < size; i++) {
      window[i] = pending[from]!;
      from = from + 1 === capacity ? 0 : from + 1;
    }
    this.pendingStart = from;
    this.pendingLength -= size;
    return window;
  }

  private async drain(generation: number): Promise<void> {
    const size = this.windowSamples;
    while (this.pendingLength >= size && generation === this.generation) {
      // Position of this window's end: everything fed minus what is still queued after it.
      const windowEndSample = this.fed - (this.pendingLength - size);
      // Taken before the run, so a failing model cannot grow the buffer, and audio dropped while
      // the window is in flight is never this one. Windows of a stream run one at a time.
      const window = this.takeWindow();
      const ran = !this.isQuiet?.(window);
      const probability = ran ? await this.runWindow(window, generation) : this.skipWindow();
      if (generation !== this.generation) return;
      this.report(probability, window, windowEndSample, ran);
    }
  }

  /** The windows the samples pushed so far complete, run at once (see push). */
  private drainNow(runNow: NonNullable<SileroBatcher['runNow']>): Promise<void> {
    const size = this.windowSamples;
    const generation = this.generation;
    try {
      while (this.pendingLength >= size && generation === this.generation) {
        const windowEndSample = this.fed - (this.pendingLength - size);
        const window = this.takeWindow();
        const ran = !this.isQuiet?.(window);
        const probability = ran ? this.runWindowNow(window, runNow) : this.skipWindow();
        // May reset this stream (a listener that disposes it): the loop then stops.
        this.report(probability, window, windowEndSample, ran);
      }
    } catch (error) {
      return Promise.reject(error);
    }
    return SETTLED;
  }

  private report(probability: number, window: Int16Array, windowEndSample: number, ran: boolean): void {
    this.processed++;
    this.lastProbability = probability;
    this.onWindow?.(probability, window, windowEndSample, ran);
  }

  private runWindowNow(window: Int16Array, runNow: NonNullable<SileroBatcher['runNow']>): number {
    const input = this.fillInput(window);
    const probability = this.quietRun > 0 ? runNow(...this.replayRows(), this.state) : runNow(input, 1, this.state);
    input.copyWithin(0, this.windowSamples, input.length);
    return probability;
  }

  /**
   * Writes the model's input row for `window` after its context, the tail of the last window run
   * (in place since that run). After quiet windows, replayRows gives the row its own context.
   */
  private fillInput(window: Int16Array): Float32Array {
    const input = this.input;
    const context = this.contextSamples;
    for (let i = 0; i < this.windowSamples; i++) input[context + i] = window[i]! * INT16_SCALE;
    return input;
  }

  /** A quiet window is not run: it stays in its slot for replay; its probability is reported as 0. */
  private skipWindow(): number {
    this.quietRun++;
    this.skipped++;
    return 0;
  }

  /**
   * The quiet windows to replay (oldest first) as rows, each after the tail of the window before
   * it (the first one's, when it followed a run, is the input's context), then the current input
   * row after the last quiet window's tail; and their count.
   */
  private replayRows(): [Float32Array, number] {
    const input = this.input;
    const rowSamples = input.length;
    const context = this.contextSamples;
    const replayed = Math.min(this.quietRun, QUIET_REPLAY_WINDOWS);
    const first = this.quietRun - replayed;
    // A quiet stretch longer than the replay: the state is begun afresh on its last second.
    if (this.quietRun > QUIET_REPLAY_WINDOWS) this.state.fill(0);
    const rows = new Float32Array((replayed + 1) * rowSamples);
    for (let i = 0; i < replayed; i++) {
      const at = i * rowSamples;
      if (first + i === 0) rows.set(input.subarray(0, context), at);
      else writeContext(rows, at, this.slots[(first + i - 1) % this.slots.length]!, context);
      const window = this.slots[(first + i) % this.slots.length]!;
      for (let j = 0; j < window.length; j++) rows[at + context + j] = window[j]! * INT16_SCALE;
    }
    rows.set(input, replayed * rowSamples);
    writeContext(rows, replayed * rowSamples, this.slots[(this.quietRun - 1) % this.slots.length]!, context);
    this.quietRun = 0;
    return [rows, replayed + 1];
  }

  private async runWindow(window: Int16Array, generation: number): Promise<number> {
    const input = this.fillInput(window);
    const context = this.contextSamples;
    const size = this.windowSamples;

    const batcher = this.batcher ?? (await this.batcherReady);
    // Windows of every call on this batcher run together; the state is updated in place. After
    // quiet windows that were skipped, they run first, in the same request.
    const probability =
      this.quietRun > 0
        ? await batcher.inferSequence(...this.replayRows(), this.state)
        : await batcher.infer(input, this.state);
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

/** Writes a row's context at `at` in `row`: the last `count` samples of `window`, scaled to -1..1. */
function writeContext(row: Float32Array, at: number, window: Int16Array, count: number): void {
  const from = window.length - count;
  for (let i = 0; i < count; i++) row[at + i] = window[from + i]! * INT16_SCALE;
}
