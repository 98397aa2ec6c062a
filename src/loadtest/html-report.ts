import type { Distribution } from './aggregate.js';
import type { LoadCallSummary } from './call-summary.js';
import type { LoadTestReport } from './report-file.js';

/**
 * The load test as one self-contained HTML page (no scripts, styles or fonts from elsewhere):
 * the aggregate figures, a histogram per latency, and one timeline row per call showing when the
 * caller spoke, when the bot's audio played, and where the line was cleared.
 */
export function renderHtmlReport(report: LoadTestReport): string {
  const a = report.aggregate;
  const rows = [
    ['calls', `${a.calls.total} (${a.calls.ok} ok, ${a.calls.failed} failed)`],
    ['outcomes', Object.entries(a.calls.byOutcome).map(([k, v]) => `${k} ${v}`).join(', ')],
    ['first bot audio', distText(a.firstBotAudioMs)],
    ['reply latency', distText(a.replyLatencyMs)],
    ['barge-in latency', distText(a.bargeInLatencyMs)],
    ['audio after clear', distText(a.lateAudioMs)],
    ['gaps in bot audio', `${a.underruns.total} in ${a.underruns.callsWithAny} calls, longest ${a.underruns.longestMs} ms`],
    ['protocol violations', String(a.violations)],
    ['generator clock lag (max)', `${a.generatorClockMaxLagMs} ms${a.generatorClockMaxLagMs > 50 ? ' — the generator was overloaded; timings are not reliable' : ''}`],
  ];
  const histograms = [
    ['Reply latency (caller’s last voiced frame → first bot audio)', report.calls.flatMap((c) => c.replyLatenciesMs)],
    ['Barge-in latency (caller’s voice over the bot → clear)', report.calls.flatMap((c) => c.bargeInLatenciesMs)],
    ['First bot audio (stream start → first bot media)', report.calls.flatMap((c) => (c.firstBotAudioMs === null ? [] : [c.firstBotAudioMs]))],
  ] as const;
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Switchboard load test ${escape(report.startedAt)}</title>
<style>
body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#1d2433}
h1{font-size:20px}h2{font-size:16px;margin-top:28px}
table{border-collapse:collapse}td,th{padding:3px 10px;text-align:left;border-bottom:1px solid #e3e6ec}
.legend span{display:inline-block;margin-right:14px}.sw{display:inline-block;width:12px;height:12px;vertical-align:middle;margin-right:4px}
.row{display:flex;align-items:center;font:12px monospace}.row .label{width:90px}.bad{color:#b3261e}
</style></head><body>
<h1>Switchboard load test</h1>
<p>${escape(report.startedAt)} · ${escape(report.target)} · ${report.options.concurrency} simultaneous, ${report.options.durationMs === undefined ? `${report.aggregate.calls.total} calls` : `${report.options.durationMs / 1000} s`}, ramp-up ${report.options.rampUpMs / 1000} s · scenario ${escape(report.scenarioName)}</p>
<table>${rows.map(([k, v]) => `<tr><th>${escape(k!)}</th><td>${escape(v!)}</td></tr>`).join('')}</table>
${histograms.map(([title, values]) => `<h2>${escape(title)}</h2>${histogramSvg(values)}`).join('\n')}
<h2>Calls</h2>
<p class="legend"><span><i class="sw" style="background:#2f6fdf"></i>bot audio</span><span><i class="sw" style="background:#2e9e5b"></i>caller speaking</span><span><i class="sw" style="background:#d93025"></i>clear</span><span><i class="sw" style="background:#f2a600"></i>DTMF</span></p>
${timelineRows(report.calls)}
</body></html>
`;
}

function distText(d: Distribution): string {
  if (d.count === 0) return 'none';
  return `p50 ${d.p50} ms · p95 ${d.p95} ms · p99 ${d.p99} ms · max ${d.max} ms (n=${d.count})`;
}

const WIDTH = 720;
const HEIGHT = 160;

function histogramSvg(values: readonly number[]): string {
  if (values.length === 0) return '<p>no samples</p>';
  const max = Math.max(...values);
  const bucketMs = niceBucket(max / 30);
  const buckets = new Map<number, number>();
  for (const v of values) {
    const b = Math.floor(v / bucketMs);
    buckets.set(b, (buckets.get(b) ?? 0) + 1);
  }
  const last = Math.max(...buckets.keys());
  const peak = Math.max(...buckets.values());
  const barWidth = (WIDTH - 40) / (last + 1);
  const bars: string[] = [];
  for (let b = 0; b <= last; b++) {
    const count = buckets.get(b) ?? 0;
    const h = (count / peak) * (HEIGHT - 30);
    bars.push(`<rect x="${30 + b * barWidth}" y="${HEIGHT - 20 - h}" width="${Math.max(1, barWidth - 1)}" height="${h}" fill="#2f6fdf"><title>${b * bucketMs}–${(b + 1) * bucketMs} ms: ${count}</title></rect>`);
  }
  return `<svg width="${WIDTH}" height="${HEIGHT}" role="img" aria-label="histogram">
<line x1="30" y1="${HEIGHT - 20}" x2="${WIDTH - 10}" y2="${HEIGHT - 20}" stroke="#8a93a6"/>${bars.join('')}
<text x="30" y="${HEIGHT - 5}" font-size="11">0 ms</text><text x="${WIDTH - 10}" y="${HEIGHT - 5}" font-size="11" text-anchor="end">${(last + 1) * bucketMs} ms</text>
<text x="32" y="12" font-size="11">peak ${peak}</text></svg>`;
}

function niceBucket(raw: number): number {
  for (const step of [5, 10, 20, 25, 50, 100, 200, 250, 500, 1000, 2000, 5000]) if (raw <= step) return step;
  return 10_000;
}

/** At most this many rows: a page with thousands of SVGs stops being readable anyway. */
const MAX_ROWS = 300;

function timelineRows(calls: readonly LoadCallSummary[]): string {
  const longest = Math.max(1, ...calls.map((c) => c.durationMs));
  const scale = (WIDTH - 10) / longest;
  const out = calls.slice(0, MAX_ROWS).map((call) => {
    const shapes: string[] = [];
    const spans = (startKind: string, endKind: string, color: string) => {
      let open: number | undefined;
      for (const e of call.timeline) {
        if (e.kind === startKind) open = e.atMs;
        else if (e.kind === endKind && open !== undefined) {
          shapes.push(`<rect x="${Math.max(0, open) * scale}" y="${color === '#2e9e5b' ? 11 : 2}" width="${Math.max(1, (e.atMs - open) * scale)}" height="8" fill="${color}"/>`);
          open = undefined;
        }
      }
      if (open !== undefined) shapes.push(`<rect x="${open * scale}" y="2" width="${Math.max(1, (call.durationMs - open) * scale)}" height="8" fill="${color}" opacity="0.5"/>`);
    };
    spans('bot-audio-start', 'bot-audio-end', '#2f6fdf');
    spans('caller-voice-start', 'caller-voice-end', '#2e9e5b');
    for (const e of call.timeline) {
      if (e.kind === 'clear-received') shapes.push(`<rect x="${e.atMs * scale}" y="0" width="2" height="21" fill="#d93025"><title>clear at ${e.atMs} ms</title></rect>`);
      if (e.kind === 'dtmf-sent') shapes.push(`<rect x="${e.atMs * scale}" y="0" width="2" height="21" fill="#f2a600"/>`);
    }
    const label = `#${call.index}${call.ok ? '' : ` ${call.outcome}`}`;
    return `<div class="row"><span class="label${call.ok ? '' : ' bad'}" title="${escape(call.endReason)}">${escape(label)}</span><svg width="${WIDTH}" height="22">${shapes.join('')}</svg></div>`;
  });
  if (calls.length > MAX_ROWS) out.push(`<p>… and ${calls.length - MAX_ROWS} more calls (in the JSON report)</p>`);
  return out.join('\n');
}

function escape(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}
