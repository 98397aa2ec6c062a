/**
 * Worker-thread side of the flite client: synthesis is synchronous WebAssembly (tens of ms per
 * sentence), so it runs here rather than on the event loop that serves every call's frames.
 * Requests run one at a time, in the order posted.
 */

import { parentPort } from 'node:worker_threads';
import { synthesizeFlite } from './flite-engine.js';

export interface FliteWorkerRequest {
  id: number;
  text: string;
  voice: string;
}

export type FliteWorkerResponse =
  | { id: number; sampleRateHz: number; samples: Int16Array<ArrayBuffer> }
  | { id: number; error: string };

const port = parentPort;
if (!port) throw new Error('flite-worker runs only as a worker thread');

let queue: Promise<void> = Promise.resolve();

port.on('message', (request: FliteWorkerRequest) => {
  queue = queue.then(async () => {
    try {
      const audio = await synthesizeFlite(request.text, { voice: request.voice });
      const samples = audio.samples.slice();
      const response: FliteWorkerResponse = { id: request.id, sampleRateHz: audio.sampleRateHz, samples };
      port.postMessage(response, [samples.buffer]);
    } catch (error) {
      const response: FliteWorkerResponse = {
        id: request.id,
        error: error instanceof Error ? error.message : String(error),
      };
      port.postMessage(response);
    }
  });
});
