import type { Scenario } from '../simulator/scenario.js';
import type { LoadAggregate } from './aggregate.js';
import type { LoadCallSummary } from './call-summary.js';

/** How the run was set up, as given (plus the thread count it used). */
export interface LoadTestConfig {
  /** What was dialled, in words: the server and configuration, the stream URL or the webhook. */
  target: string;
  scenarioFile: string;
  scenario: Scenario;
  concurrency: number;
  calls?: number;
  durationMs?: number;
  rampUpMs: number;
  workers: number;
}

/** What `switchboard loadtest` writes as report.json, and renders as report.html. */
export interface LoadTestReport {
  startedAt: string;
  elapsedMs: number;
  config: LoadTestConfig;
  /** Interrupted (Ctrl-C) before its calls or duration were done. */
  stoppedEarly: boolean;
  /** Generator threads that died mid-run; empty normally. */
  generatorErrors: string[];
  aggregate: LoadAggregate;
  calls: LoadCallSummary[];
}
