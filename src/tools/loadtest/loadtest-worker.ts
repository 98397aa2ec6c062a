import { parentPort, workerData } from 'node:worker_threads';
import { PhoneCall } from '../simulator/phone-call.js';
import { summarizeCall } from './call-summary.js';
import type { FromWorker, LiveCallLatencies, ToWorker, WorkerInit } from './worker-protocol.js';

/**
 * A load-generator thread: places the calls the main thread asks for, each a PhoneCall of the
 * simulator, and posts back a summary as each ends. Many calls share one thread's event loop;
 * the main thread only schedules and aggregates, so it stays responsive for progress output.
 */
const init = workerData as WorkerInit;
const port = parentPort!;
/** Calls in progress and their hang-up switches: one controller per call, so none outlives its call. */
const calls = new Map<number, { call: PhoneCall; hangUp: AbortController }>();
let stopped = false;
/** Latency counts last posted per call, so only calls with something new are sent. */
const postedCounts = new Map<number, number>();

function post(message: FromWorker): void {
  port.postMessage(message);
}

function postLive(): void {
  const changed: LiveCallLatencies[] = [];
  for (const [index, { call }] of calls) {
    const so = call.latenciesSoFar();
    const count = so.replyLatenciesMs.length + so.bargeInLatenciesMs.length;
    if (count === (postedCounts.get(index) ?? 0)) continue;
    postedCounts.set(index, count);
    changed.push({ index, ...so });
  }
  if (changed.length > 0) post({ type: 'live', calls: changed });
}

// Unref'd: the thread ends when the main thread terminates it, never because of this timer.
setInterval(postLive, init.liveIntervalMs).unref();

port.on('message', (message: ToWorker) => {
  if (message.type === 'stop') {
    stopped = true;
    for (const { hangUp } of calls.values()) hangUp.abort();
    return;
  }
  const { index, startedAtMs } = message;
  const hangUp = new AbortController();
  // A start that crossed a stop: the call reports itself aborted before dialling.
  if (stopped) hangUp.abort();
  let call: PhoneCall;
  try {
    call = new PhoneCall({
      target: init.target,
      scenario: init.scenario,
      clips: init.clips,
      authToken: init.authToken,
      signal: hangUp.signal,
      maxTimelineEvents: 2000,
    });
  } catch (err) {
    post({ type: 'crashed', index, error: err instanceof Error ? err.message : String(err) });
    return;
  }
  calls.set(index, { call, hangUp });
  call
    .run()
    .then(
      (report) => post({ type: 'ended', index, summary: summarizeCall(report, index, startedAtMs) }),
      (err: unknown) => post({ type: 'crashed', index, error: err instanceof Error ? err.message : String(err) }),
    )
    .finally(() => {
      calls.delete(index);
      postedCounts.delete(index);
    });
});

post({ type: 'ready' });
