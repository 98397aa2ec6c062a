import { parentPort, workerData } from 'node:worker_threads';
import { PhoneCall } from '../simulator/phone-call.js';
import { summarizeCall } from './call-summary.js';
import type { FromWorker, ToWorker, WorkerInit } from './worker-protocol.js';

/**
 * A load-generator thread: places the calls the main thread asks for, each a PhoneCall of the
 * simulator, and posts back a summary as each ends. Many calls share one thread's event loop;
 * the main thread only schedules and aggregates, so it stays responsive for progress output.
 */
const init = workerData as WorkerInit;
const port = parentPort!;
const hangUp = new AbortController();

function post(message: FromWorker): void {
  port.postMessage(message);
}

port.on('message', (message: ToWorker) => {
  if (message.type === 'stop') {
    hangUp.abort();
    return;
  }
  const startedAtMs = Date.now() - init.originEpochMs;
  const call = new PhoneCall({
    target: init.target,
    scenario: init.scenario,
    clips: init.clips,
    authToken: init.authToken,
    signal: hangUp.signal,
    maxTimelineEvents: 2000,
  });
  call.run().then(
    (report) => post({ type: 'ended', index: message.index, summary: summarizeCall(report, message.index, startedAtMs) }),
    (err: unknown) => post({ type: 'crashed', index: message.index, error: err instanceof Error ? err.message : String(err) }),
  );
});
