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
  /** performance.timeOrigin + now() of the load test's start, so every worker stamps the same clock. */
  originEpochMs: number;
}

export type ToWorker = { type: 'start'; index: number } | { type: 'stop' };

export type FromWorker = { type: 'ended'; index: number; summary: LoadCallSummary } | { type: 'crashed'; index: number; error: string };
