import type { Worker } from 'node:worker_threads';
import { moduleDirUrl } from '../../shared/package-files.js';
import { startModuleWorker } from '../../shared/worker-thread.js';
import type { CallerClip } from '../simulator/caller-clip.js';
import type { PhoneCallTarget } from '../simulator/phone-call.js';
import type { Scenario } from '../simulator/scenario.js';
import { type LoadAggregate, aggregate, distribution } from './aggregate.js';
import type { LoadCallSummary } from './call-summary.js';
import type { FromWorker, LiveCallLatencies, ToWorker, WorkerInit } from './worker-protocol.js';

export interface LoadTestOptions {
  target: PhoneCallTarget;
  scenario: Scenario;
  clips: Record<string, CallerClip>;
  /** Simultaneous calls. */
  concurrency: number;
  /** Calls in all; default `concurrency`. Ignored when durationMs is set. */
  calls?: number;
  /** Keep `concurrency` calls up for this long, starting a new one as each ends; then hang up. */
  durationMs?: number;
  /** The first `concurrency` calls start evenly over this long. */
  rampUpMs: number;
  /** Generator threads; default defaultWorkerCount(concurrency). */
  workers?: number;
  authToken?: string;
  /** Stops early (e.g. Ctrl-C): no new calls, the running ones hang up, and the result is returned. */
  signal?: AbortSignal;
  /** About once a second while running. */
  onProgress?: (progress: LoadProgress) => void;
}

export interface LoadProgress {
  elapsedMs: number;
  active: number;
  done: number;
  failed: number;
  /** Over ended calls and what calls in progress measured so far. */
  replyLatencyP50Ms: number | null;
  replyLatencyP95Ms: number | null;
  bargeInLatencyP50Ms: number | null;
  bargeInLatencyP95Ms: number | null;
}

export interface LoadTestResult {
  startedAt: string;
  elapsedMs: number;
  workers: number;
  /** The signal stopped the run before its calls or duration were done. */
  stoppedEarly: boolean;
  /** Generator threads that died mid-run (their calls count as errors); empty normally. */
  generatorErrors: string[];
  calls: LoadCallSummary[];
  aggregate: LoadAggregate;
}

const CALLS_PER_WORKER = 100;
const PROGRESS_INTERVAL_MS = 1000;
/** Loading a worker from TypeScript sources compiles them first, which takes seconds on a busy machine. */
const WORKER_START_TIMEOUT_MS = 60_000;
/**
 * After a stop, calls hang up (stop, close, at most a 2 s close grace); one still running after
 * this long is written off rather than holding the report back.
 */
const STOP_GRACE_MS = 10_000;

/** One generator thread per 100 simultaneous calls, at least one. */
export function defaultWorkerCount(concurrency: number): number {
  return Math.max(1, Math.ceil(concurrency / CALLS_PER_WORKER));
}

/** Resolves once every worker has posted 'ready'; rejects if one fails or exits first. */
async function whenReady(workers: readonly Worker[]): Promise<void> {
  await Promise.all(
    workers.map(
      (worker) =>
        new Promise<void>((resolve, reject) => {
          const timer = setTimeout(
            () => fail(new Error(`not ready after ${WORKER_START_TIMEOUT_MS / 1000} s`)),
            WORKER_START_TIMEOUT_MS,
          );
          const onMessage = (message: FromWorker) => {
            if (message.type !== 'ready') return;
            cleanup();
            resolve();
          };
          const onError = (err: Error) => fail(err);
          const onExit = (code: number) => fail(new Error(`exited with code ${code}`));
          function cleanup(): void {
            clearTimeout(timer);
            worker.off('message', onMessage).off('error', onError).off('exit', onExit);
          }
          function fail(err: Error): void {
            cleanup();
            reject(new Error(`a load generator thread did not start: ${err.message}`));
          }
          worker.on('message', onMessage).on('error', onError).on('exit', onExit);
        }),
    ),
  );
}

/**
 * Runs simultaneous simulated calls from worker threads and gathers what each measured. It never
 * throws for calls that fail: those are results. It throws only when no generator thread starts.
 */
export async function runLoadTest(options: LoadTestOptions): Promise<LoadTestResult> {
  const total = options.durationMs === undefined ? (options.calls ?? options.concurrency) : Number.POSITIVE_INFINITY;
  const workerCount = Math.max(1, options.workers ?? defaultWorkerCount(options.concurrency));
  const init: WorkerInit = {
    target: options.target,
    scenario: options.scenario,
    clips: options.clips,
    authToken: options.authToken,
    liveIntervalMs: PROGRESS_INTERVAL_MS,
  };
  const workers = Array.from({ length: workerCount }, () =>
    startModuleWorker(moduleDirUrl('tools/loadtest'), 'loadtest-worker', init),
  );
  try {
    await whenReady(workers);
  } catch (err) {
    await Promise.all(workers.map((w) => w.terminate()));
    throw err;
  }

  // The clock starts once the threads are up, so loading them does not eat into the ramp-up.
  const originEpochMs = Date.now();
  const started = performance.now();
  const elapsed = () => performance.now() - started;
  /** Calls in progress per live thread; a thread that dies leaves this map. */
  const load = new Map<Worker, number>(workers.map((w) => [w, 0]));
  const runningOn = new Map<number, Worker>();
  const live = new Map<number, LiveCallLatencies>();
  const calls: LoadCallSummary[] = [];
  const generatorErrors: string[] = [];
  let startedCount = 0;
  let stopping = false;
  let stoppedEarly = false;
  let shuttingDown = false;

  const progress = (): LoadProgress => {
    const done = aggregate(calls);
    const liveCalls = [...live.values()];
    const reply = distribution([
      ...calls.flatMap((c) => c.replyLatenciesMs),
      ...liveCalls.flatMap((c) => c.replyLatenciesMs),
    ]);
    const bargeIn = distribution([
      ...calls.flatMap((c) => c.bargeInLatenciesMs),
      ...liveCalls.flatMap((c) => c.bargeInLatenciesMs),
    ]);
    return {
      elapsedMs: Math.round(elapsed()),
      active: runningOn.size,
      done: calls.length,
      failed: done.calls.failed,
      replyLatencyP50Ms: reply.p50,
      replyLatencyP95Ms: reply.p95,
      bargeInLatencyP50Ms: bargeIn.p50,
      bargeInLatencyP95Ms: bargeIn.p95,
    };
  };

  const ticker = setInterval(() => options.onProgress?.(progress()), PROGRESS_INTERVAL_MS);
  const timers: NodeJS.Timeout[] = [];
  let onAbort = (): void => {};
  try {
    await new Promise<void>((resolve) => {
      const finishIfDone = (): void => {
        if (runningOn.size === 0 && (stopping || startedCount >= total)) resolve();
      };
      const ended = (index: number, summary: LoadCallSummary): void => {
        const worker = runningOn.get(index);
        if (worker === undefined) return; // already written off
        runningOn.delete(index);
        live.delete(index);
        if (load.has(worker)) load.set(worker, load.get(worker)! - 1);
        calls.push(summary);
      };
      const startOne = (): void => {
        if (stopping || startedCount >= total || load.size === 0) return;
        // The least busy thread takes the call.
        const worker = [...load.entries()].sort((a, b) => a[1] - b[1])[0]![0];
        load.set(worker, load.get(worker)! + 1);
        const index = startedCount;
        startedCount += 1;
        runningOn.set(index, worker);
        worker.postMessage({ type: 'start', index, startedAtMs: Math.round(elapsed()) } satisfies ToWorker);
      };
      const stop = (early: boolean): void => {
        if (stopping) return;
        stopping = true;
        stoppedEarly = early;
        for (const worker of load.keys()) worker.postMessage({ type: 'stop' } satisfies ToWorker);
        const grace = setTimeout(() => {
          for (const index of [...runningOn.keys()])
            ended(index, failedCall(index, 'did not end after hanging up', elapsed()));
          resolve();
        }, STOP_GRACE_MS);
        timers.push(grace);
        finishIfDone();
      };

      for (const worker of workers) {
        worker.on('message', (message: FromWorker) => {
          if (message.type === 'live') {
            for (const call of message.calls) if (runningOn.has(call.index)) live.set(call.index, call);
            return;
          }
          if (message.type === 'ready') return;
          ended(
            message.index,
            message.type === 'ended'
              ? message.summary
              : failedCall(message.index, `the generator failed: ${message.error}`, elapsed()),
          );
          startOne();
          finishIfDone();
        });
        let failure = '';
        worker.on('error', (err) => (failure = err.message));
        worker.on('exit', (code) => {
          if (shuttingDown) return;
          // A dead thread takes its calls with it; the others carry on with the rest.
          load.delete(worker);
          generatorErrors.push(`a generator thread exited (code ${code})${failure ? `: ${failure}` : ''}`);
          let lost = 0;
          for (const [index, owner] of [...runningOn]) {
            if (owner !== worker) continue;
            ended(index, failedCall(index, `its generator thread died${failure ? `: ${failure}` : ''}`, elapsed()));
            lost += 1;
          }
          if (load.size === 0) stopping = true;
          // As when calls end: each lost call makes room for the next one, on the threads left.
          for (let i = 0; i < lost; i++) startOne();
          finishIfDone();
        });
      }

      const slots = Math.min(options.concurrency, total);
      for (let i = 0; i < slots; i++) timers.push(setTimeout(startOne, (i * options.rampUpMs) / slots));
      if (options.durationMs !== undefined) timers.push(setTimeout(() => stop(false), options.durationMs));
      onAbort = () => stop(true);
      if (options.signal?.aborted) stop(true);
      else options.signal?.addEventListener('abort', onAbort, { once: true });
    });
  } finally {
    shuttingDown = true;
    clearInterval(ticker);
    for (const timer of timers) clearTimeout(timer);
    options.signal?.removeEventListener('abort', onAbort);
    await Promise.all(workers.map((w) => w.terminate()));
  }
  options.onProgress?.(progress());
  calls.sort((a, b) => a.index - b.index);
  return {
    startedAt: new Date(originEpochMs).toISOString(),
    elapsedMs: Math.round(elapsed()),
    workers: workerCount,
    stoppedEarly,
    generatorErrors,
    calls,
    aggregate: aggregate(calls),
  };
}

/** A call the generator lost (not the server): counted as an error, with nothing measured. */
function failedCall(index: number, reason: string, atMs: number): LoadCallSummary {
  return {
    index,
    callSid: '',
    outcome: 'error',
    endReason: reason,
    ok: false,
    startedAtMs: Math.round(atMs),
    durationMs: 0,
    firstBotAudioMs: null,
    replyLatenciesMs: [],
    bargeInLatenciesMs: [],
    lateAudioMs: [],
    resumedReplies: 0,
    cutReplies: 0,
    underruns: 0,
    longestUnderrunMs: 0,
    toolCalls: 0,
    toolFailures: 0,
    violations: 0,
    clockMaxLagMs: 0,
    timeline: [],
  };
}
