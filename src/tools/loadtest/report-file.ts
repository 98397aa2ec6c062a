import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { renderHtmlReport } from './html-report.js';
import type { LoadTestReport } from './load-test-report.js';

export async function writeReports(report: LoadTestReport, dir: string): Promise<{ json: string; html: string }> {
  await mkdir(dir, { recursive: true });
  const json = join(dir, 'report.json');
  const html = join(dir, 'report.html');
  await writeFile(json, `${JSON.stringify(report, null, 2)}\n`);
  await writeFile(html, renderHtmlReport(report));
  return { json, html };
}
