import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { LoadAggregate } from './aggregate.js';
import type { LoadCallSummary } from './call-summary.js';
import { renderHtmlReport } from './html-report.js';

/** What `switchboard loadtest` writes as report.json, and renders as report.html. */
export interface LoadTestReport {
  startedAt: string;
  elapsedMs: number;
  target: string;
  scenarioName: string;
  options: { concurrency: number; calls?: number; durationMs?: number; rampUpMs: number; workers: number };
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
