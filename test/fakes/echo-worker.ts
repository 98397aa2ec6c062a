/**
 * A worker thread for the tests of src/shared/worker-rpc.ts: answers each request with its text
 * after `delayMs`, answers `fail` with an error, and exits with code 3 on `exit`.
 */
import { parentPort } from 'node:worker_threads';

export interface EchoRequest {
  id: number;
  text: string;
  delayMs?: number;
  fail?: boolean;
  exit?: boolean;
}

export type EchoResponse = { id: number; echoed: string } | { id: number; error: string };

const port = parentPort;
if (!port) throw new Error('echo-worker runs only as a worker thread');

port.on('message', (request: EchoRequest) => {
  if (request.exit) process.exit(3);
  setTimeout(() => {
    const response: EchoResponse = request.fail
      ? { id: request.id, error: `refused: ${request.text}` }
      : { id: request.id, echoed: request.text };
    port.postMessage(response);
  }, request.delayMs ?? 0);
});
