/**
 * Camera pictures made in a worker thread (camera-worker.ts). The worker starts on the first
 * keyframe a vision room receives and is unref'd; if it dies, the pictures in flight fail and the
 * next starts a new one.
 */

import type { Worker } from 'node:worker_threads';
import { startModuleWorker } from '../../shared/worker-thread.js';
import type { CameraWorkerRequest, CameraWorkerResponse } from './camera-worker.js';

interface Pending {
  resolve: (jpegBase64: string | undefined) => void;
  reject: (error: unknown) => void;
}

let worker: Worker | undefined;
const pending = new Map<number, Pending>();
let nextId = 1;

function currentWorker(): Worker {
  if (worker) return worker;
  const started = startModuleWorker(import.meta.url, 'camera-worker');
  started.on('message', (response: CameraWorkerResponse) => {
    const entry = pending.get(response.id);
    if (!entry) return;
    pending.delete(response.id);
    if ('error' in response) entry.reject(new Error(response.error));
    else entry.resolve(response.jpegBase64);
  });
  const onGone = (error: Error) => {
    if (worker !== started) return;
    worker = undefined;
    const failed = [...pending.values()];
    pending.clear();
    for (const entry of failed) entry.reject(error);
  };
  started.on('error', onGone);
  started.on('exit', (code) => onGone(new Error(`camera worker exited (code ${code})`)));
  // After the listeners: adding a 'message' listener refs the worker's port again.
  started.unref();
  worker = started;
  return started;
}

/** A whole VP8 keyframe as a JPEG picture (base64); undefined when libvpx cannot decode it. */
export function keyframeToJpeg(keyframe: Uint8Array): Promise<string | undefined> {
  const id = nextId++;
  return new Promise((resolve, reject) => {
    pending.set(id, { resolve, reject });
    const request: CameraWorkerRequest = { id, keyframe };
    currentWorker().postMessage(request);
  });
}

/** Starts the worker ahead of the first keyframe (a camera has just appeared), so that picture does not wait for it. */
export function warmCameraWorker(): void {
  currentWorker();
}
