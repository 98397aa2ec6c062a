/**
 * Flite synthesis in a worker thread (flite-worker.ts), so an apology or a no-bot message never
 * blocks the event loop: a vendor outage that makes a hundred calls apologise at once would
 * otherwise stall every call's audio for seconds. The worker starts on first use and is unref'd;
 * if it dies, requests in flight fail and the next starts a new one (shared/worker-rpc.ts).
 *
 * It holds about 50 MB (a V8 isolate, flite's WebAssembly and its voice), which most servers never
 * need: the offline voice speaks only when a vendor fails or no bot answers, or for bots
 * configured with it. So it is not loaded ahead of calls, and it is stopped once it has had
 * nothing to say for FLITE_IDLE_MS. The first apology after that waits for flite to compile
 * (about half a second on the 2-core reference box, docs/cost-per-call.md).
 */

import { moduleDirUrl } from '../../../shared/package-files.js';
import { WorkerRpc } from '../../../shared/worker-rpc.js';
import type { FliteAudio, FliteOptions } from './flite-engine.js';
import { DEFAULT_FLITE_VOICE, findFliteVoice, UnknownFliteVoiceError } from './flite-voices.js';
import type { FliteWorkerRequest, FliteWorkerResponse } from './flite-worker.js';

/** How long the worker stays loaded with nothing to synthesise. */
export const FLITE_IDLE_MS = 60_000;
let idleMs = FLITE_IDLE_MS;

/** Changes FLITE_IDLE_MS (tests); applies from the next request. */
export function setFliteIdleMs(ms: number): void {
  idleMs = ms;
}

// Pure WebAssembly, no native call to interrupt: stopping it when idle is safe.
const flite = new WorkerRpc<FliteWorkerRequest, FliteWorkerResponse, FliteAudio>({
  besideUrl: moduleDirUrl('providers/tts/flite'),
  name: 'flite-worker',
  result: (response) => ({ sampleRateHz: response.sampleRateHz, samples: response.samples }),
  idleMs: () => idleMs,
});

/** Whether the worker is loaded (tests, benchmarks). */
export function fliteWorkerLoaded(): boolean {
  return flite.loaded;
}

/** Same contract as synthesizeFlite, run in the worker; an abort rejects at once. */
export function synthesizeFliteInWorker(text: string, opts: FliteOptions = {}): Promise<FliteAudio> {
  const voice = opts.voice ?? DEFAULT_FLITE_VOICE;
  if (!findFliteVoice(voice)) return Promise.reject(new UnknownFliteVoiceError(voice));
  return flite.request({ text, voice }, opts.signal);
}

/** Compiles flite in the worker and speaks one word (tests and benchmarks: measures the cold start). */
export async function warmFliteWorker(): Promise<number> {
  const startedAt = performance.now();
  await synthesizeFliteInWorker('ok');
  return performance.now() - startedAt;
}
