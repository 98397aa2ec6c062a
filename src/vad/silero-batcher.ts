import type * as Ort from 'onnxruntime-node';
import {
  loadOnnxRuntime,
  SILERO_INPUT,
  SILERO_OUTPUT,
  SILERO_SAMPLE_RATE,
  SILERO_STATE,
  SILERO_STATE_OUT,
  type SileroSampleRateHz,
  sampleRateTensor,
} from './silero-model.js';

/** Recurrent state per stream: two layers of 128. */
const STATE_WIDTH = 128;
/** More streams than this in one run would make the first of them wait for the last. */
const MAX_BATCH = 256;

/**
 * Runs one batched Silero inference: `input` is [steps, batchSize, rowSamples] (context + window
 * per stream, for `steps` consecutive windows of each stream), `state` is [2, batchSize, 128]. The
 * steps run one after the other, each on the state the previous one left. In this thread
 * on an onnxruntime session (sessionRunner) or on the TypeScript network (silero-network.ts). The arrays are only read until
 * the returned promise settles.
 */
export interface SileroBatchRunner {
  /**
   * Runs one stream's `steps` consecutive rows of `rows` (each context + window) at once, in this
   * thread; `state` ([2, 1, 128]) is read and overwritten with the state after the last step.
   * Returns the last step's probability. Only a runner that computes in this thread has it.
   */
  runNow?(rows: Float32Array, steps: number, state: Float32Array): number;
  run(
    input: Float32Array,
    state: Float32Array,
    batchSize: number,
    rowSamples: number,
    steps?: number,
  ): Promise<SileroBatchResult>;
}

export interface SileroBatchResult {
  /** Speech probability per stream for the last step, [batchSize]. */
  output: Float32Array;
  /** Recurrent state after the last step, [2, batchSize, 128]. */
  stateN: Float32Array;
}

/** Runs batches on a session in this thread. onnxruntime-node's run is synchronous under its promise. */
export function sessionRunner(session: Ort.InferenceSession, sampleRateHz: SileroSampleRateHz): SileroBatchRunner {
  return {
    async run(input, state, batchSize, rowSamples, steps = 1) {
      // Already loaded: the session came from it.
      const ort = await loadOnnxRuntime();
      const stepSize = batchSize * rowSamples;
      let result: SileroBatchResult | undefined;
      for (let step = 0; step < steps; step++) {
        const results = await session.run({
          [SILERO_INPUT]: new ort.Tensor('float32', input.subarray(step * stepSize, (step + 1) * stepSize), [
            batchSize,
            rowSamples,
          ]),
          [SILERO_STATE]: new ort.Tensor('float32', result?.stateN ?? state, [2, batchSize, STATE_WIDTH]),
          [SILERO_SAMPLE_RATE]: sampleRateTensor(ort, sampleRateHz),
        });
        const output = results[SILERO_OUTPUT]?.data as Float32Array | undefined;
        const stateN = results[SILERO_STATE_OUT]?.data as Float32Array | undefined;
        if (!output || !stateN) throw new Error('Silero VAD model returned no output/stateN tensor');
        result = { output, stateN };
      }
      if (!result) throw new RangeError(`Silero VAD run needs at least one step, got ${steps}`);
      return result;
    },
  };
}

interface Pending {
  /** `steps` rows of context + window, oldest first. */
  input: Float32Array;
  steps: number;
  state: Float32Array;
  resolve: (probability: number) => void;
  reject: (error: unknown) => void;
}

/**
 * Runs the windows of many calls as one Silero inference. Silero's graph takes a batch dimension
 * (input [B, samples], state [2, B, 128]) and gives each row the same result it would give alone,
 * while one batched run costs a fraction of B single runs (bench/vad-throughput.ts on the 2-core
 * box: about 0.21 ms per window alone, 0.05 ms in a batch of 64, 0.03 ms in a batch of 300). Windows that arrive while a run is in flight, or in the same
 * turn of the event loop, go into the next run: under load, batches grow by themselves; a quiet
 * server runs them one by one, with no added wait.
 *
 * With `gatherMs` (for a runner in another thread), the first window of a batch also waits that long for
 * other calls' windows: calls' frames arrive at their own phases, so without it most runs hold one
 * window, and each run costs a message to the worker and back plus the model's fixed cost per run
 * (bench/vad-throughput.ts: 0.14 ms for one window, 0.26 ms for four).
 *
 * Added latency, which counts against barge-in (start_secs + 40 ms): a window waits at most
 * `gatherMs`, then for the run in flight plus its own run. Measured by bench/vad-throughput.ts, a
 * full batch of 300 calls takes about 8 ms on one core of the 2-core reference box, so a window is
 * reported within about 20 ms of its last sample arriving even at 300 calls.
 */
export class SileroBatcher {
  private queue: Pending[] = [];
  private busy = false;
  private inputBuffer = new Float32Array(0);
  private stateBuffer = new Float32Array(0);
  /** Largest batch run so far (for benchmarks and tests). */
  maxBatchSeen = 0;

  /** Runs and batch sizes so far (for benchmarks and tests). */
  runs = 0;
  windows = 0;

  /**
   * @param gatherMs how long the first window of a batch waits for others; 0 waits only for the
   *   rest of the current event-loop turn.
   */
  constructor(
    private readonly runner: SileroBatchRunner,
    private readonly gatherMs = 0,
  ) {
    const runNow = runner.runNow;
    this.runNow = runNow
      ? (rows, steps, state) => {
          this.runs += steps;
          this.windows += steps;
          return runNow.call(runner, rows, steps, state);
        }
      : undefined;
  }

  /**
   * A stream's windows run at once, with no batch, promise or turn of the event loop around them:
   * set when the runner computes in this thread (silero-network.ts), where batching saves nothing
   * (the streams of a batch run one after the other), while the promises, the queue and the copies
   * in and out of the batch's buffers cost the pipeline 4-5 % of its CPU per call
   * (docs/cost-per-call.md, "A window at once").
   */
  readonly runNow: ((rows: Float32Array, steps: number, state: Float32Array) => number) | undefined;

  /** One window (context + samples, scaled to -1..1) of one stream; `state` is updated in place. */
  infer(input: Float32Array, state: Float32Array): Promise<number> {
    return this.enqueue(input, 1, state);
  }

  /**
   * Consecutive windows of one stream (`steps` rows of context + samples, oldest first), run one
   * after the other in a single request; resolves with the last window's probability, `state` is
   * updated in place. For catching a stream up on windows it did not run (silero.ts).
   */
  inferSequence(rows: Float32Array, steps: number, state: Float32Array): Promise<number> {
    if (steps === 1) return this.infer(rows, state);
    return this.enqueue(rows, steps, state);
  }

  private enqueue(input: Float32Array, steps: number, state: Float32Array): Promise<number> {
    return new Promise<number>((resolve, reject) => {
      this.queue.push({ input, steps, state, resolve, reject });
      if (!this.busy) {
        this.busy = true;
        // Let other windows join the batch: those of this event-loop turn, or of the next gatherMs.
        if (this.gatherMs > 0) setTimeout(() => void this.runBatches(), this.gatherMs);
        else setImmediate(() => void this.runBatches());
      }
    });
  }

  /**
   * Runs what is queued, then gives the event loop a turn before running what came meanwhile: a
   * runner that computes in this thread (silero-network.ts) settles its promise at once, and a
   * stream with windows waiting (a carrier catching up) queues its next window from that
   * settlement, so looping until the queue is empty could hold sockets and the playout clock
   * for as long as the backlog lasts.
   */
  private async runBatches(): Promise<void> {
    // Sequences run alone (each of their steps needs the one before); single windows together.
    const groups: Pending[][] = [];
    const batch: Pending[] = [];
    const waiting: Pending[] = [];
    for (const item of this.queue) {
      if (item.steps > 1) groups.push([item]);
      else if (batch.length < MAX_BATCH) batch.push(item);
      else waiting.push(item);
    }
    this.queue = waiting;
    groups.push(batch);
    for (const group of groups) {
      if (group.length === 0) continue;
      try {
        await this.run(group);
      } catch (error) {
        for (const item of group) item.reject(error);
      }
    }
    if (this.queue.length > 0) setImmediate(() => void this.runBatches());
    else this.busy = false;
  }

  /** One request: a batch of single windows, or one stream's sequence (a batch of one, several steps). */
  private async run(batch: Pending[]): Promise<void> {
    const size = batch.length;
    const steps = batch[0]!.steps;
    const samples = batch[0]!.input.length / steps;
    const inputSize = size * samples * steps;
    if (this.inputBuffer.length < inputSize) this.inputBuffer = new Float32Array(inputSize * 2);
    if (this.stateBuffer.length < 2 * size * STATE_WIDTH) this.stateBuffer = new Float32Array(4 * size * STATE_WIDTH);
    const input = this.inputBuffer.subarray(0, inputSize);
    const state = this.stateBuffer.subarray(0, 2 * size * STATE_WIDTH);
    for (let i = 0; i < size; i++) {
      const item = batch[i]!;
      // Rows are [steps, batch]: a sequence is a batch of one, so its rows are already in order.
      input.set(item.input, i * samples);
      state.set(item.state.subarray(0, STATE_WIDTH), i * STATE_WIDTH);
      state.set(item.state.subarray(STATE_WIDTH, 2 * STATE_WIDTH), (size + i) * STATE_WIDTH);
    }
    this.maxBatchSeen = Math.max(this.maxBatchSeen, size);
    this.runs += steps;
    this.windows += size * steps;
    const { output, stateN: nextState } = await this.runner.run(input, state, size, samples, steps);
    if (output.length < size || nextState.length < 2 * size * STATE_WIDTH) {
      throw new Error(`Silero VAD batch of ${size} returned ${output.length} outputs`);
    }
    for (let i = 0; i < size; i++) {
      const item = batch[i]!;
      item.state.set(nextState.subarray(i * STATE_WIDTH, (i + 1) * STATE_WIDTH), 0);
      item.state.set(nextState.subarray((size + i) * STATE_WIDTH, (size + i + 1) * STATE_WIDTH), STATE_WIDTH);
      item.resolve(output[i]!);
    }
  }
}

const batchers = new WeakMap<Ort.InferenceSession, Map<number, SileroBatcher>>();

/** The batcher of a session at a sample rate: every stream on that session shares it. */
export function sileroBatcher(session: Ort.InferenceSession, sampleRateHz: SileroSampleRateHz): SileroBatcher {
  let byRate = batchers.get(session);
  if (!byRate) {
    byRate = new Map();
    batchers.set(session, byRate);
  }
  let batcher = byRate.get(sampleRateHz);
  if (!batcher) {
    batcher = new SileroBatcher(sessionRunner(session, sampleRateHz));
    byRate.set(sampleRateHz, batcher);
  }
  return batcher;
}
