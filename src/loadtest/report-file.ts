import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Scenario } from '../simulator/scenario.js';
import type { LoadAggregate } from './aggregate.js';
import type { LoadCallSummary } from './call-summary.js';
import { renderHtmlReport } from './html-report.js';

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

export async function writeReports(report: LoadTestReport, dir: string): Promise<{ json: string; html: string }> {
  await mkdir(dir, { recursive: true });
  const json = join(dir, 'report.json');
  const html = join(dir, 'report.html');
  await writeFile(json, `${JSON.stringify(report, null, 2)}\n`);
  await writeFile(html, renderHtmlReport(report));
  return { json, html };
}
