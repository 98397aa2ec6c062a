/**
 * Runs Silero batches in a worker thread that owns its own session (an ONNX Runtime session is
 * not shared between threads: one per process or per worker thread). The main thread only gathers and scatters state rows and
 * posts one message per batch; bench/hot-path.ts shows why: at 300 calls, inference in the main
 * thread takes a third of a core in runs of up to 8 ms, which the event loop cannot spare on a
 * 2-core box.
 *
 * The worker starts on first use and is unref'd, so it never keeps the process alive. If it dies,
 * the batches in flight fail (their calls go on without VAD) and the next batch starts a new one.
 */

import type { Worker } from 'node:worker_threads';
import { startModuleWorker } from '../shared/worker-thread.js';
import { SileroBatcher, type SileroBatchResult, type SileroBatchRunner } from './silero-batcher.js';
import {
  SILERO_GEOMETRY,
  SILERO_STATE_SIZE,
  type SileroSampleRateHz,
  disableOnnxRuntimeTelemetry,
} from './silero-model.js';
import type { SileroWorkerMessage, SileroWorkerRequest, SileroWorkerResponse } from './silero-worker.js';

interface InFlight {
  resolve: (result: SileroBatchResult) => void;
  reject: (error: unknown) => void;
}

export class SileroWorkerRunner implements SileroBatchRunner {
  private worker: Worker | undefined;
  private readonly inFlight = new Map<number, InFlight>();
  private nextId = 1;

  constructor(private readonly sampleRateHz: SileroSampleRateHz) {}

  run(
    input: Float32Array,
    state: Float32Array,
    batchSize: number,
    rowSamples: number,
    steps = 1,
  ): Promise<SileroBatchResult> {
    const worker = this.worker ?? this.start();
    const id = this.nextId++;
    // Copied into fresh arrays (once per batch, not per frame) so they can be transferred while
    // the batcher keeps its own buffers.
    const request: SileroWorkerRequest = {
      type: 'run',
      id,
      sampleRateHz: this.sampleRateHz,
      input: input.slice(),
      state: state.slice(),
      batchSize,
      rowSamples,
      steps,
    };
    return new Promise<SileroBatchResult>((resolve, reject) => {
      this.inFlight.set(id, { resolve, reject });
      worker.postMessage(request, [request.input.buffer, request.state.buffer]);
    });
  }

  /**
   * Stops the worker (tests, shutdown); batches in flight fail at once. The thread releases its
   * session and ends by itself (never terminate(): killing it inside a native onnxruntime call
   * aborts the process). The next run starts a new worker.
   */
  async close(): Promise<void> {
    const worker = this.worker;
    this.worker = undefined;
    this.failAll(new Error('Silero VAD worker closed'));
    if (!worker) return;
    const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
    const message: SileroWorkerMessage = { type: 'close' };
    worker.postMessage(message);
    await exited;
  }

  private start(): Worker {
    disableOnnxRuntimeTelemetry();
    const worker = startModuleWorker(import.meta.url, 'silero-worker');
    worker.on('message', (response: SileroWorkerResponse) => {
      const pending = this.inFlight.get(response.id);
      if (!pending) return;
      this.inFlight.delete(response.id);
      if ('error' in response) pending.reject(new Error(`Silero VAD inference failed: ${response.error}`));
      else pending.resolve(response);
    });
    const onGone = (error: Error) => {
      if (this.worker !== worker) return;
      this.worker = undefined;
      this.failAll(error);
    };
    worker.on('error', onGone);
    worker.on('exit', (code) => onGone(new Error(`Silero VAD worker exited (code ${code})`)));
    // After the listeners: adding a 'message' listener refs the worker's port again.
    worker.unref();
    this.worker = worker;
    return worker;
  }

  private failAll(error: Error): void {
    const pending = [...this.inFlight.values()];
    this.inFlight.clear();
    for (const item of pending) item.reject(error);
  }
}

/**
 * How long the first window of a batch waits for other calls' windows before it goes to the
 * worker. At 50 talking calls (1,560 windows/s) about 7.5 windows share a run instead of 3.3,
 * which halves the messages to the worker and back and its wake-ups (docs/cost-per-call.md); a
 * speech start or stop is reported at most this much later.
 */
export const WORKER_GATHER_MS = 4;

const workerRunners = new Map<SileroSampleRateHz, SileroWorkerRunner>();
const workerBatchers = new Map<SileroSampleRateHz, SileroBatcher>();

/** The process-wide batcher whose inference runs in the Silero worker thread; calls share it. */
export function workerSileroBatcher(sampleRateHz: SileroSampleRateHz = 8000): SileroBatcher {
  let batcher = workerBatchers.get(sampleRateHz);
  if (!batcher) {
    const runner = new SileroWorkerRunner(sampleRateHz);
    batcher = new SileroBatcher(runner, WORKER_GATHER_MS);
    workerRunners.set(sampleRateHz, runner);
    workerBatchers.set(sampleRateHz, batcher);
  }
  return batcher;
}

/** Stops the process-wide Silero worker threads (shutdown, tests); later windows start new ones. */
export async function closeSileroWorkers(): Promise<void> {
  await Promise.all([...workerRunners.values()].map((runner) => runner.close()));
}

/**
 * Loads the model in the worker and runs one silent window, so the first call does not wait for
 * it (about half a second). Resolves with how long that took; failures are the caller's to log.
 */
export async function warmSileroWorker(sampleRateHz: SileroSampleRateHz = 8000): Promise<number> {
  const startedAt = performance.now();
  const { windowSamples, contextSamples } = SILERO_GEOMETRY[sampleRateHz];
  await workerSileroBatcher(sampleRateHz).infer(
    new Float32Array(contextSamples + windowSamples),
    new Float32Array(SILERO_STATE_SIZE),
  );
  return performance.now() - startedAt;
}
