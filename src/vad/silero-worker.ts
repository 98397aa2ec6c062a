/**
 * Worker-thread side of SileroWorkerRunner: owns its own Silero session and runs the batches the
 * main thread posts, so inference never blocks the event loop that serves sockets and the playout
 * clock. One batch at a time, in the order posted.
 */

import { parentPort } from 'node:worker_threads';
import { sessionRunner } from './silero-batcher.js';
import { getSileroSession, releaseSileroSession, type SileroSampleRateHz } from './silero-model.js';

/** A batch to run (the arrays are transferred, not copied), or the request to shut down. */
export type SileroWorkerMessage = SileroWorkerRequest | { type: 'close' };

export interface SileroWorkerRequest {
  type: 'run';
  id: number;
  sampleRateHz: SileroSampleRateHz;
  input: Float32Array<ArrayBuffer>;
  state: Float32Array<ArrayBuffer>;
  batchSize: number;
  rowSamples: number;
  /** Consecutive windows per stream in `input` (see SileroBatchRunner). */
  steps: number;
}

export type SileroWorkerResponse =
  | { id: number; output: Float32Array<ArrayBuffer>; stateN: Float32Array<ArrayBuffer> }
  | { id: number; error: string };

const port = parentPort;
if (!port) throw new Error('silero-worker runs only as a worker thread');

let closing = false;

port.on('message', (message: SileroWorkerMessage) => {
  if (message.type === 'close') {
    // Ends the thread by letting its event loop empty: terminating it from outside while
    // onnxruntime is inside a native call aborts the whole process.
    closing = true;
    void releaseSileroSession().finally(() => port.close());
    return;
  }
  if (closing) return;
  void runRequest(message).then((response) => {
    if (closing) return;
    if ('output' in response) port.postMessage(response, [response.output.buffer, response.stateN.buffer]);
    else port.postMessage(response);
  });
});

async function runRequest(request: SileroWorkerRequest): Promise<SileroWorkerResponse> {
  try {
    const session = await getSileroSession();
    const result = await sessionRunner(session, request.sampleRateHz).run(
      request.input,
      request.state,
      request.batchSize,
      request.rowSamples,
      request.steps,
    );
    // Copies: the tensors' buffers belong to onnxruntime, and transferring them would detach them.
    return { id: request.id, output: result.output.slice(), stateN: result.stateN.slice() };
  } catch (error) {
    return { id: request.id, error: error instanceof Error ? error.message : String(error) };
  }
}
