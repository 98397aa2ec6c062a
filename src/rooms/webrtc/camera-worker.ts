/**
 * Worker-thread side of the camera pictures: a VP8 keyframe in, a JPEG (base64) out. Decoding is
 * synchronous WebAssembly and JPEG encoding plain JavaScript, tens to hundreds of milliseconds a
 * picture, so they run here rather than on the event loop that paces every call's audio. Keyframes
 * decode on their own, so one decoder serves every participant. Requests run in the order posted.
 */

import { parentPort } from 'node:worker_threads';
import { encodeJpeg } from './camera-picture.js';
import { Vp8Decoder } from './vp8-decoder.js';

export interface CameraWorkerRequest {
  id: number;
  keyframe: Uint8Array;
}

export type CameraWorkerResponse = { id: number; jpegBase64: string | undefined } | { id: number; error: string };

const port = parentPort;
if (!port) throw new Error('camera-worker runs only as a worker thread');

let decoder: Promise<Vp8Decoder> | undefined;
let queue: Promise<void> = Promise.resolve();

port.on('message', (request: CameraWorkerRequest) => {
  queue = queue.then(async () => {
    let response: CameraWorkerResponse;
    try {
      decoder ??= Vp8Decoder.create();
      const picture = await (await decoder).decode(request.keyframe);
      response = { id: request.id, jpegBase64: picture ? encodeJpeg(picture).toString('base64') : undefined };
    } catch (err) {
      // A decoder that threw may be in any state: the next request gets a fresh one.
      decoder = undefined;
      response = { id: request.id, error: (err as Error).message };
    }
    port.postMessage(response);
  });
});
