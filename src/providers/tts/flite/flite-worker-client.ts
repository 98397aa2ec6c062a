/**
 * Flite synthesis in a worker thread (flite-worker.ts), so an apology or a no-bot message never
 * blocks the event loop: a vendor outage that makes a hundred calls apologise at once would
 * otherwise stall every call's audio for seconds. The worker starts on first use and is unref'd;
 * if it dies, requests in flight fail and the next starts a new one.
 *
 * It holds about 50 MB (a V8 isolate, flite's WebAssembly and its voice), which most servers never
 * need: the offline voice speaks only when a vendor fails or no bot answers, or for bots
 * configured with it. So it is not loaded ahead of calls, and it is stopped once it has had
 * nothing to say for FLITE_IDLE_MS. The first apology after that waits for flite to compile
 * (about half a second on the 2-core reference box, docs/cost-per-call.md).
 */

import type { Worker } from 'node:worker_threads';
import { startModuleWorker } from '../../../shared/worker-thread.js';
import type { FliteAudio, FliteOptions } from './flite-engine.js';
import { DEFAULT_FLITE_VOICE, findFliteVoice, UnknownFliteVoiceError } from './flite-voices.js';
import type { FliteWorkerRequest, FliteWorkerResponse } from './flite-worker.js';

interface Pending {
  resolve: (audio: FliteAudio) => void;
  reject: (error: unknown) => void;
}

/** How long the worker stays loaded with nothing to synthesise. */
export const FLITE_IDLE_MS = 60_000;
let idleMs = FLITE_IDLE_MS;

/** Changes FLITE_IDLE_MS (tests); applies from the next request. */
export function setFliteIdleMs(ms: number): void {
  idleMs = ms;
}

let worker: Worker | undefined;
const pending = new Map<number, Pending>();
let nextId = 1;
let idleTimer: NodeJS.Timeout | undefined;

/** Stops the worker once nothing is pending for idleMs; any request cancels the countdown. */
function settled(id: number): void {
  pending.delete(id);
  if (pending.size > 0 || !worker) return;
  clearTimeout(idleTimer);
  const idle = worker;
  idleTimer = setTimeout(() => {
    if (worker !== idle || pending.size > 0) return;
    worker = undefined;
    // Pure WebAssembly, no native call to interrupt: terminating is safe.
    void idle.terminate();
  }, idleMs);
  idleTimer.unref();
}

/** Whether the worker is loaded (tests, benchmarks). */
export function fliteWorkerLoaded(): boolean {
  return worker !== undefined;
}

function currentWorker(): Worker {
  if (worker) return worker;
  const started = startModuleWorker(import.meta.url, 'flite-worker');
  started.on('message', (response: FliteWorkerResponse) => {
    const entry = pending.get(response.id);
    if (!entry) return;
    settled(response.id);
    if ('error' in response) entry.reject(new Error(response.error));
    else entry.resolve({ sampleRateHz: response.sampleRateHz, samples: response.samples });
  });
  const onGone = (error: Error) => {
    if (worker !== started) return;
    worker = undefined;
    const failed = [...pending.values()];
    pending.clear();
    for (const entry of failed) entry.reject(error);
  };
  started.on('error', onGone);
  started.on('exit', (code) => onGone(new Error(`flite worker exited (code ${code})`)));
  // After the listeners: adding a 'message' listener refs the worker's port again.
  started.unref();
  worker = started;
  return started;
}

/** Same contract as synthesizeFlite, run in the worker; an abort rejects at once. */
export function synthesizeFliteInWorker(text: string, opts: FliteOptions = {}): Promise<FliteAudio> {
  const voice = opts.voice ?? DEFAULT_FLITE_VOICE;
  if (!findFliteVoice(voice)) return Promise.reject(new UnknownFliteVoiceError(voice));
  const { signal } = opts;
  if (signal?.aborted) return Promise.reject(signal.reason);
  const id = nextId++;
  return new Promise<FliteAudio>((resolve, reject) => {
    const onAbort = () => {
      // The worker finishes the piece anyway; its answer finds no one waiting.
      settled(id);
      reject(signal!.reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
    pending.set(id, {
      resolve: (audio) => {
        signal?.removeEventListener('abort', onAbort);
        resolve(audio);
      },
      reject: (error) => {
        signal?.removeEventListener('abort', onAbort);
        reject(error);
      },
    });
    const request: FliteWorkerRequest = { id, text, voice };
    clearTimeout(idleTimer);
    currentWorker().postMessage(request);
  });
}

/** Compiles flite in the worker and speaks one word (tests and benchmarks: measures the cold start). */
export async function warmFliteWorker(): Promise<number> {
  const startedAt = performance.now();
  await synthesizeFliteInWorker('ok');
  return performance.now() - startedAt;
}
