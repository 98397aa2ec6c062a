/**
 * Camera pictures made in a worker thread (camera-worker.ts). The worker starts on the first
 * keyframe a vision room receives and is unref'd; if it dies, the pictures in flight fail and the
 * next starts a new one.
 */

import { moduleDirUrl } from '../../shared/package-files.js';
import { WorkerRpc } from '../../shared/worker-rpc.js';
import type { CameraWorkerRequest, CameraWorkerResponse } from './camera-worker.js';

const camera = new WorkerRpc<CameraWorkerRequest, CameraWorkerResponse, string | undefined>({
  besideUrl: moduleDirUrl('rooms/webrtc'),
  name: 'camera-worker',
  result: (response) => response.jpegBase64,
});

/** A whole VP8 keyframe as a JPEG picture (base64); undefined when libvpx cannot decode it. */
export function keyframeToJpeg(keyframe: Uint8Array): Promise<string | undefined> {
  return camera.request({ keyframe });
}

/** Starts the worker ahead of the first keyframe (a camera has just appeared), so that picture does not wait for it. */
export function warmCameraWorker(): void {
  camera.warm();
}
