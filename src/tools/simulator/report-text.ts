import type { CallReport, TimelineEvent } from './call-report.js';

/** Mark traffic is one pair of lines every few frames; shown only when asked for. */
export function isMarkEvent(event: TimelineEvent): boolean {
  return event.kind === 'mark-received' || event.kind === 'mark-echoed';
}

/** One line per event: right-aligned ms offset from stream start, kind, detail. */
export function formatTimelineEvent(event: TimelineEvent): string {
  const at = `${event.atMs} ms`.padStart(10);
  return `${at}  ${event.kind.padEnd(18)}${event.detail ? `  ${event.detail}` : ''}`;
}

function ms(value: number | null): string {
  return value === null ? '—' : `${value} ms`;
}

function stats(values: number[]): string {
  if (values.length === 0) return 'none';
  const sorted = values.slice().sort((a, b) => a - b);
  const median = sorted[Math.floor((sorted.length - 1) / 2)]!;
  return values.length === 1
    ? `${values[0]} ms`
    : `median ${median} ms, min ${sorted[0]} ms, max ${sorted[sorted.length - 1]} ms (n=${values.length})`;
}

/** The end-of-call summary: outcome, then latencies, then bot audio health and protocol. */
export function formatSummary(report: CallReport): string {
  const m = report.metrics;
  const lines: string[] = [];
  const close = report.close
    ? `, socket closed ${report.close.code}${report.close.reason ? ` "${report.close.reason}"` : ''} by ${report.close.by}`
    : '';
  lines.push(
    `call ${report.callSid}: ${report.outcome} (${report.endReason}) after ${(report.durationMs / 1000).toFixed(1)} s${close}`,
  );
  if (report.setup.webhookMs !== null || report.setup.connectMs !== null) {
    lines.push(`  set-up: webhook ${ms(report.setup.webhookMs)}, websocket ${ms(report.setup.connectMs)}`);
  }
  lines.push(`  first bot audio: ${ms(m.firstBotAudioMs)} after stream start`);
  m.utterances.forEach((u, i) => {
    const voice = u.firstVoicedMs === null ? 'no speech detected' : `voice ${u.firstVoicedMs}–${u.lastVoicedMs} ms`;
    const bargeIn = u.bargeIn
      ? `, barge-in latency ${u.bargeInLatencyMs === null ? 'none (bot never cleared)' : `${u.bargeInLatencyMs} ms`}`
      : '';
    lines.push(`  utterance ${i + 1} "${u.clip}": ${voice}, reply latency ${ms(u.replyLatencyMs)}${bargeIn}`);
  });
  lines.push(`  reply latency: ${stats(m.replyLatenciesMs)}`);
  lines.push(`  barge-in latency: ${stats(m.bargeInLatenciesMs)}`);
  for (const c of m.clears) {
    const late =
      c.lastLateAudioAfterMs === null
        ? 'no audio after it'
        : `${c.lateAudioMs} ms of audio within ${m.clearWindowMs} ms after it (last at +${c.lastLateAudioAfterMs} ms)`;
    const resumed = c.resumedAfterMs === null ? '' : `; the bot resumed ${c.resumedAfterMs} ms after it`;
    lines.push(`  clear at ${c.atMs} ms: dropped ${c.droppedAudioMs} ms queued, ${late}${resumed}`);
  }
  const b = m.bot;
  lines.push(
    `  bot audio: ${b.segments} segment(s), received ${b.receivedAudioMs} ms, played ${b.playedAudioMs} ms, ` +
      `underruns ${b.underruns}${b.underruns ? ` (total ${b.underrunTotalMs} ms, longest ${b.longestUnderrunMs} ms)` : ''}` +
      `${b.shortFrames ? `, ${b.shortFrames} short frames` : ''}` +
      `${b.keysHeard ? `; pressed keys ${b.keysHeard}` : ''}`,
  );
  if (m.tools.started > 0) {
    const tools = Object.entries(m.tools.byTool).map(([tool, n]) => `${tool} ×${n}`);
    const outcomes = Object.entries(m.tools.byOutcome).map(([outcome, n]) => `${outcome} ${n}`);
    lines.push(`  function calls: ${m.tools.started} (${tools.join(', ')}); ${outcomes.join(', ') || 'none ended'}`);
  }
  lines.push(
    `  marks: ${m.marks.received} received, ${m.marks.echoed} echoed; caller sent ${m.caller.framesSent} frames, ${m.caller.dtmfSent} DTMF`,
  );
  const kinds = Object.entries(m.violations.byKind).map(([kind, count]) => `${kind} ×${count}`);
  lines.push(
    `  protocol violations: ${m.violations.total === 0 ? 'none' : `${m.violations.total} (${kinds.join(', ')})`}`,
  );
  if (m.clockMaxLagMs > 40)
    lines.push(`  warning: the simulator's clock ran up to ${m.clockMaxLagMs} ms late; timings are unreliable`);
  return `${lines.join('\n')}\n`;
}
