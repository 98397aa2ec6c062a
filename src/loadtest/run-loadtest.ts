import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { CallerClip } from '../simulator/caller-clip.js';
import type { PhoneCallTarget } from '../simulator/phone-call.js';
import type { Scenario } from '../simulator/scenario.js';
import { type LoadAggregate, aggregate } from './aggregate.js';
import type { LoadCallSummary } from './call-summary.js';
import type { FromWorker, ToWorker, WorkerInit } from './worker-protocol.js';

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
  /** Generator threads; default one per 100 simultaneous calls. */
  workers?: number;
  authToken?: string;
  /** About once a second while running. */
  onProgress?: (progress: LoadProgress) => void;
}

export interface LoadProgress {
  elapsedMs: number;
  active: number;
  done: number;
  failed: number;
  replyLatencyP50Ms: number | null;
  replyLatencyP95Ms: number | null;
  bargeInLatencyP50Ms: number | null;
}

export interface LoadTestResult {
  startedAt: string;
  elapsedMs: number;
  calls: LoadCallSummary[];
  aggregate: LoadAggregate;
}

const CALLS_PER_WORKER = 100;
const PROGRESS_INTERVAL_MS = 1000;

/**
 * Starts a generator thread: the compiled worker next to this file, or, when running from the
 * TypeScript sources (tests, tsx), the .ts worker through tsx's loader, registered in the thread.
 */
function startWorker(init: WorkerInit): Worker {
  const compiled = new URL('./loadtest-worker.js', import.meta.url);
  if (existsSync(fileURLToPath(compiled))) return new Worker(compiled, { workerData: init });
  const source = new URL('./loadtest-worker.ts', import.meta.url).href;
  const bootstrap = `import('tsx/esm/api').then(({ register }) => { register(); return import(${JSON.stringify(source)}); });`;
  return new Worker(bootstrap, { eval: true, workerData: init });
}

/**
 * Runs simultaneous simulated calls from worker threads and gathers what each measured. It never
 * throws for calls that fail: those are results.
 */
export async function runLoadTest(options: LoadTestOptions): Promise<LoadTestResult> {
  const total = options.durationMs === undefined ? (options.calls ?? options.concurrency) : Number.POSITIVE_INFINITY;
  const workerCount = Math.max(1, options.workers ?? Math.ceil(options.concurrency / CALLS_PER_WORKER));
  const originEpochMs = Date.now();
  const started = performance.now();
  const init: WorkerInit = { target: options.target, scenario: options.scenario, clips: options.clips, authToken: options.authToken, originEpochMs };
  const workers = Array.from({ length: workerCount }, () => startWorker(init));
  const active = new Map<Worker, number>(workers.map((w) => [w, 0]));
  const calls: LoadCallSummary[] = [];
  let startedCount = 0;
  let running = 0;
  let stopping = false;

  const elapsed = () => performance.now() - started;
  const progress = (): LoadProgress => {
    const done = aggregate(calls);
    return {
      elapsedMs: Math.round(elapsed()),
      active: running,
      done: calls.length,
      failed: done.calls.failed,
      replyLatencyP50Ms: done.replyLatencyMs.p50,
      replyLatencyP95Ms: done.replyLatencyMs.p95,
      bargeInLatencyP50Ms: done.bargeInLatencyMs.p50,
    };
  };

  const ticker = setInterval(() => options.onProgress?.(progress()), PROGRESS_INTERVAL_MS);
  try {
    await new Promise<void>((resolve, reject) => {
      const startOne = (): void => {
        if (stopping || startedCount >= total) return;
        // The least busy thread takes the call.
        const worker = [...active.entries()].sort((a, b) => a[1] - b[1])[0]![0];
        active.set(worker, active.get(worker)! + 1);
        running += 1;
        const message: ToWorker = { type: 'start', index: startedCount };
        startedCount += 1;
        worker.postMessage(message);
      };
      const finishIfDone = (): void => {
        if (running === 0 && (stopping || startedCount >= total)) resolve();
      };
      for (const worker of workers) {
        worker.on('message', (message: FromWorker) => {
          active.set(worker, active.get(worker)! - 1);
          running -= 1;
          if (message.type === 'ended') calls.push(message.summary);
          else calls.push(crashedCall(message.index, message.error, elapsed()));
          startOne();
          finishIfDone();
        });
        worker.on('error', reject);
      }
      const slots = Math.min(options.concurrency, total);
      for (let i = 0; i < slots; i++) setTimeout(startOne, (i * options.rampUpMs) / Math.max(1, slots));
      if (options.durationMs !== undefined) {
        setTimeout(() => {
          stopping = true;
          for (const worker of workers) worker.postMessage({ type: 'stop' } satisfies ToWorker);
          finishIfDone();
        }, options.durationMs);
      }
    });
  } finally {
    clearInterval(ticker);
    await Promise.all(workers.map((w) => w.terminate()));
  }
  options.onProgress?.(progress());
  calls.sort((a, b) => a.index - b.index);
  return { startedAt: new Date(originEpochMs).toISOString(), elapsedMs: Math.round(elapsed()), calls, aggregate: aggregate(calls) };
}

function crashedCall(index: number, error: string, atMs: number): LoadCallSummary {
  return {
    index,
    callSid: '',
    outcome: 'error',
    endReason: `the generator failed: ${error}`,
    ok: false,
    startedAtMs: Math.round(atMs),
    durationMs: 0,
    firstBotAudioMs: null,
    replyLatenciesMs: [],
    bargeInLatenciesMs: [],
    lateAudioMs: [],
    underruns: 0,
    longestUnderrunMs: 0,
    violations: 0,
    clockMaxLagMs: 0,
    timeline: [],
  };
}
