import { type Distribution, distribution } from './aggregate.js';
import type { LoadCallSummary } from './call-summary.js';
import type { LoadTestReport } from './load-test-report.js';

/**
 * The load test as one self-contained HTML page (no scripts, styles or fonts from elsewhere, so
 * it can be mailed or archived as is): the set-up, the aggregate figures, a histogram per
 * latency, and one timeline row per call showing when the caller spoke, when the bot's audio
 * played, where the line was cleared, and how the call ended.
 */
export function renderHtmlReport(report: LoadTestReport): string {
  const a = report.aggregate;
  const c = report.config;
  const load = c.durationMs === undefined ? `${c.calls ?? a.calls.total} calls` : `for ${c.durationMs / 1000} s`;
  const rows = [
    ['calls', `${a.calls.total} (${a.calls.ok} ok, ${a.calls.failed} failed)`],
    [
      'outcomes',
      Object.entries(a.calls.byOutcome)
        .map(([k, v]) => `${k} ${v}`)
        .join(', ') || 'none',
    ],
    ['first bot audio', distText(a.firstBotAudioMs)],
    ['reply latency', distText(a.replyLatencyMs)],
    ['barge-in latency', distText(a.bargeInLatencyMs)],
    ['audio after clear', distText(a.lateAudioMs)],
    [
      'gaps in bot audio',
      `${a.underruns.total} in ${a.underruns.callsWithAny} calls, longest ${a.underruns.longestMs} ms`,
    ],
    ['function calls', `${a.toolCalls.total} in ${a.toolCalls.callsWithAny} calls, ${a.toolCalls.failed} failed`],
    ['protocol violations', String(a.violations)],
    ['generator clock lag (max)', `${a.generatorClockMaxLagMs} ms`],
  ];
  const warnings = [
    ...(report.stoppedEarly ? ['Stopped early: the figures cover the calls placed until then.'] : []),
    ...(a.generatorOverloaded
      ? [
          `The load generator was overloaded (its 20 ms clock lagged up to ${a.generatorClockMaxLagMs} ms): latencies include its own delay.`,
        ]
      : []),
    ...report.generatorErrors,
  ];
  const histograms = [
    [
      'Reply latency (caller’s last voiced frame → first bot audio)',
      report.calls.flatMap((call) => call.replyLatenciesMs),
    ],
    ['Barge-in latency (caller’s voice over the bot → clear)', report.calls.flatMap((call) => call.bargeInLatenciesMs)],
    [
      'First bot audio (stream start → first bot media)',
      report.calls.flatMap((call) => (call.firstBotAudioMs === null ? [] : [call.firstBotAudioMs])),
    ],
  ] as const;
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Switchboard load test ${escapeHtml(report.startedAt)}</title>
<style>
body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#1d2433}
h1{font-size:20px}h2{font-size:16px;margin-top:28px}
table{border-collapse:collapse}td,th{padding:3px 10px;text-align:left;border-bottom:1px solid #e3e6ec}
.warn{background:#fff4d6;border-left:4px solid #f2a600;padding:6px 10px}
.legend span{display:inline-block;margin-right:14px}.sw{display:inline-block;width:12px;height:12px;vertical-align:middle;margin-right:4px}
.cap{color:#5b6475;font-size:12px;margin:0}
.row{display:flex;align-items:center;font:12px monospace}.row .label{width:150px;white-space:nowrap;overflow:hidden}.bad{color:#b3261e}
</style></head><body>
<h1>Switchboard load test</h1>
<p>${escapeHtml(report.startedAt)} · ${escapeHtml(c.target)} · ${c.concurrency} simultaneous, ${escapeHtml(load)}, ramp-up ${c.rampUpMs / 1000} s, ${c.workers} generator thread${c.workers === 1 ? '' : 's'} · scenario ${escapeHtml(c.scenarioFile)} · ran ${(report.elapsedMs / 1000).toFixed(1)} s</p>
${warnings.map((w) => `<p class="warn">${escapeHtml(w)}</p>`).join('\n')}
<table>${rows.map(([k, v]) => `<tr><th>${escapeHtml(k!)}</th><td>${escapeHtml(v!)}</td></tr>`).join('')}</table>
${histograms.map(([title, values]) => `<h2>${escapeHtml(title)}</h2>${histogramSvg(values)}`).join('\n')}
<h2>Calls</h2>
<p>One row per call, from its stream start; hover for details.</p>
<p class="legend"><span><i class="sw" style="background:${COLORS.bot}"></i>bot audio</span><span><i class="sw" style="background:${COLORS.caller}"></i>caller speaking</span><span><i class="sw" style="background:${COLORS.clear}"></i>clear</span><span><i class="sw" style="background:${COLORS.dtmf}"></i>DTMF</span><span><i class="sw" style="background:${COLORS.failure}"></i>error or server close</span><span><i class="sw" style="background:${COLORS.timeout}"></i>wait timed out</span></p>
${timelineRows(report.calls)}
</body></html>
`;
}

const COLORS = {
  bot: '#2f6fdf',
  caller: '#2e9e5b',
  clear: '#d93025',
  dtmf: '#f2a600',
  failure: '#7b1fa2',
  timeout: '#8a93a6',
} as const;

function distText(d: Distribution): string {
  if (d.count === 0) return 'none';
  return `p50 ${d.p50} ms · p95 ${d.p95} ms · p99 ${d.p99} ms · max ${d.max} ms (n=${d.count})`;
}

const WIDTH = 720;
const HEIGHT = 160;

function histogramSvg(values: readonly number[]): string {
  if (values.length === 0) return '<p>no samples</p>';
  const d = distribution(values);
  const bucketMs = niceStep(d.max! / 30);
  const buckets = new Map<number, number>();
  for (const v of values) {
    const b = Math.floor(v / bucketMs);
    buckets.set(b, (buckets.get(b) ?? 0) + 1);
  }
  const last = Math.max(...buckets.keys());
  const peak = Math.max(...buckets.values());
  const spanMs = (last + 1) * bucketMs;
  const plotWidth = WIDTH - 40;
  const x = (ms: number) => (30 + (ms / spanMs) * plotWidth).toFixed(1);
  const baseY = HEIGHT - 20;
  const bars: string[] = [];
  for (let b = 0; b <= last; b++) {
    const count = buckets.get(b) ?? 0;
    const h = (count / peak) * (HEIGHT - 40);
    bars.push(
      `<rect x="${x(b * bucketMs)}" y="${baseY - h}" width="${Math.max(1, plotWidth / (last + 1) - 1).toFixed(1)}" height="${h}" fill="${COLORS.bot}"><title>${b * bucketMs}–${(b + 1) * bucketMs} ms: ${count}</title></rect>`,
    );
  }
  const ticks: string[] = [];
  const tickMs = niceStep(spanMs / 6);
  for (let t = 0; t <= spanMs; t += tickMs)
    ticks.push(
      `<line x1="${x(t)}" y1="${baseY}" x2="${x(t)}" y2="${baseY + 4}" stroke="#8a93a6"/><text x="${x(t)}" y="${HEIGHT - 5}" font-size="11" text-anchor="middle">${t} ms</text>`,
    );
  // The percentiles as dashed lines, so the shape and the summary figures read together.
  const marks = (
    [
      ['p50', d.p50!],
      ['p95', d.p95!],
    ] as const
  ).map(
    ([name, ms], i) =>
      `<line x1="${x(ms)}" y1="16" x2="${x(ms)}" y2="${baseY}" stroke="${COLORS.clear}" stroke-dasharray="3 3"/><text x="${x(ms)}" y="12" font-size="11" text-anchor="${i === 0 ? 'end' : 'start'}" fill="${COLORS.clear}">${i === 0 ? `${name} ${ms} ms ` : ` ${name} ${ms} ms`}</text>`,
  );
  return `<p class="cap">${d.count} samples, ${bucketMs} ms per bar, the tallest ${peak}</p>
<svg width="${WIDTH + 20}" height="${HEIGHT}" role="img" aria-label="histogram">
<line x1="30" y1="${baseY}" x2="${WIDTH - 10}" y2="${baseY}" stroke="#8a93a6"/>${bars.join('')}${ticks.join('')}${marks.join('')}</svg>`;
}

/** The smallest round step at least `raw`, for histogram buckets and axis ticks. */
function niceStep(raw: number): number {
  for (const step of [5, 10, 20, 25, 50, 100, 200, 250, 500, 1000, 2000, 5000, 10_000, 20_000, 30_000, 60_000])
    if (raw <= step) return step;
  return 120_000;
}

/** At most this many rows: a page with thousands of SVGs stops being readable anyway. */
const MAX_ROWS = 300;
const ROW_HEIGHT = 22;

function timelineRows(calls: readonly LoadCallSummary[]): string {
  const longestMs = Math.max(1, ...calls.map((call) => call.durationMs));
  const scale = (WIDTH - 10) / longestMs;
  const x = (ms: number) => (Math.max(0, ms) * scale).toFixed(1);
  const tickMs = niceStep(longestMs / 8);
  const ticks: string[] = [];
  for (let t = 0; t <= longestMs; t += tickMs)
    ticks.push(
      `<line x1="${x(t)}" y1="0" x2="${x(t)}" y2="6" stroke="#8a93a6"/><text x="${x(t)}" y="17" font-size="10" text-anchor="${t === 0 ? 'start' : 'middle'}">${t / 1000} s</text>`,
    );
  const axis = `<div class="row"><span class="label"></span><svg width="${WIDTH + 20}" height="20">${ticks.join('')}</svg></div>`;

  const out = calls.slice(0, MAX_ROWS).map((call) => {
    const shapes: string[] = [];
    const spans = (startKind: string, endKind: string, color: string, y: number, what: string) => {
      let open: number | undefined;
      for (const e of call.timeline) {
        if (e.kind === startKind) open = e.atMs;
        else if (e.kind === endKind && open !== undefined) {
          shapes.push(
            `<rect x="${x(open)}" y="${y}" width="${Math.max(1, (e.atMs - open) * scale).toFixed(1)}" height="8" fill="${color}"><title>${what} ${open}–${e.atMs} ms</title></rect>`,
          );
          open = undefined;
        }
      }
      // Still open when the call ended (or the timeline was cut): drawn to the end, faded.
      if (open !== undefined)
        shapes.push(
          `<rect x="${x(open)}" y="${y}" width="${Math.max(1, (call.durationMs - open) * scale).toFixed(1)}" height="8" fill="${color}" opacity="0.5"/>`,
        );
    };
    spans('bot-audio-start', 'bot-audio-end', COLORS.bot, 2, 'bot audio');
    spans('caller-voice-start', 'caller-voice-end', COLORS.caller, 12, 'caller speaking');
    for (const e of call.timeline) {
      const color =
        e.kind === 'clear-received'
          ? COLORS.clear
          : e.kind === 'dtmf-sent'
            ? COLORS.dtmf
            : e.kind === 'error' ||
                e.kind === 'violation' ||
                (e.kind === 'socket-closed' && e.detail?.startsWith('by server'))
              ? COLORS.failure
              : e.kind === 'wait-timeout'
                ? COLORS.timeout
                : undefined;
      if (color)
        shapes.push(
          `<rect x="${x(e.atMs)}" y="0" width="2" height="${ROW_HEIGHT - 1}" fill="${color}"><title>${escapeHtml(`${e.kind} at ${e.atMs} ms${e.detail ? `: ${e.detail}` : ''}`)}</title></rect>`,
        );
    }
    const label = `#${call.index}${call.ok ? '' : ` ${call.outcome}`}`;
    const title = `${call.callSid || 'no call'} · started ${(call.startedAtMs / 1000).toFixed(1)} s into the run · ${call.durationMs} ms · ${call.endReason}`;
    return `<div class="row"><span class="label${call.ok ? '' : ' bad'}" title="${escapeHtml(title)}">${escapeHtml(label)}</span><svg width="${WIDTH}" height="${ROW_HEIGHT}"><title>${escapeHtml(title)}</title>${shapes.join('')}</svg></div>`;
  });
  if (calls.length > MAX_ROWS) out.push(`<p>… and ${calls.length - MAX_ROWS} more calls (in report.json)</p>`);
  return [axis, ...out].join('\n');
}

function escapeHtml(text: string): string {
  return text.replace(
    /[&<>"']/g,
    (ch) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[ch]!,
  );
}
