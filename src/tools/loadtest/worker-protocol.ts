import type { CallerClip } from '../simulator/caller-clip.js';
import type { PhoneCallTarget } from '../simulator/phone-call.js';
import type { Scenario } from '../simulator/scenario.js';
import type { LoadCallSummary } from './call-summary.js';

/** Sent once to each worker: what every call it places does. */
export interface WorkerInit {
  target: PhoneCallTarget;
  scenario: Scenario;
  clips: Record<string, CallerClip>;
  authToken?: string;
  /** How often the worker posts the latencies of its calls still in progress. */
  liveIntervalMs: number;
}

export type ToWorker =
  /** Place call `index`; startedAtMs is when the main thread scheduled it, on the run's clock. */
  | { type: 'start'; index: number; startedAtMs: number }
  /** Hang up every call and take no more. */
  | { type: 'stop' };

/** Latencies measured so far by one call still in progress; each replaces the call's previous one. */
export interface LiveCallLatencies {
  index: number;
  replyLatenciesMs: number[];
  bargeInLatenciesMs: number[];
}

export type FromWorker =
  /** The worker has loaded and takes calls; the ramp-up clock starts when all have. */
  | { type: 'ready' }
  | { type: 'live'; calls: LiveCallLatencies[] }
  | { type: 'ended'; index: number; summary: LoadCallSummary }
  | { type: 'crashed'; index: number; error: string };
