/**
 * Flite synthesis in a worker thread (flite-worker.ts), so an apology or a no-bot message never
 * blocks the event loop: a vendor outage that makes a hundred calls apologise at once would
 * otherwise stall every call's audio for seconds. The worker starts on first use (or at start-up,
 * warmFliteWorker) and is unref'd; if it dies, requests in flight fail and the next starts a new one.
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

let worker: Worker | undefined;
const pending = new Map<number, Pending>();
let nextId = 1;

function currentWorker(): Worker {
  if (worker) return worker;
  const started = startModuleWorker(import.meta.url, 'flite-worker');
  started.on('message', (response: FliteWorkerResponse) => {
    const entry = pending.get(response.id);
    if (!entry) return;
    pending.delete(response.id);
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
      pending.delete(id);
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
    currentWorker().postMessage(request);
  });
}

/** Compiles flite in the worker and speaks one word, so the first apology does not wait for it. */
export async function warmFliteWorker(): Promise<number> {
  const startedAt = performance.now();
  await synthesizeFliteInWorker('ok');
  return performance.now() - startedAt;
}
