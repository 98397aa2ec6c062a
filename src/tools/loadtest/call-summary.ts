import type { CallOutcome, CallReport, TimelineKind } from '../simulator/call-report.js';

/** Timeline kinds worth drawing in the report's per-call rows (marks and media are not). */
const DRAWN_KINDS: ReadonlySet<TimelineKind> = new Set<TimelineKind>([
  'caller-voice-start',
  'caller-voice-end',
  'bot-audio-start',
  'bot-audio-end',
  'clear-received',
  'dtmf-sent',
  'dtmf-heard',
  'tool-call',
  'wait-timeout',
  'violation',
  'hangup',
  'socket-closed',
  'error',
]);

/** What the load tester keeps of one call: its figures and a small timeline, not every mark. */
export interface LoadCallSummary {
  index: number;
  callSid: string;
  outcome: CallOutcome;
  endReason: string;
  /** Normal end: connected, closed without an error code, no protocol violation. */
  ok: boolean;
  /** ms since the load test began. */
  startedAtMs: number;
  durationMs: number;
  firstBotAudioMs: number | null;
  replyLatenciesMs: number[];
  bargeInLatenciesMs: number[];
  /** Bot audio received after each clear that was not a resume (from a cancelled reply). */
  lateAudioMs: number[];
  /**
   * Clears after which the reply resumed (a false stop on noise, nothing lost), and clears after
   * which it did not (a barge-in; over noise alone, the unheard rest of the reply was lost).
   */
  resumedReplies: number;
  cutReplies: number;
  underruns: number;
  longestUnderrunMs: number;
  /** The bot's function calls the server marked on the stream, and those that ended in anything but ok. */
  toolCalls: number;
  toolFailures: number;
  violations: number;
  clockMaxLagMs: number;
  timeline: Array<{ atMs: number; kind: TimelineKind; detail?: string }>;
}

const NORMAL_CLOSE_CODES = new Set([1000, 1001, 1005]);

export function summarizeCall(report: CallReport, index: number, startedAtMs: number): LoadCallSummary {
  const m = report.metrics;
  const closedBadly =
    report.close !== null && report.close.by === 'server' && !NORMAL_CLOSE_CODES.has(report.close.code);
  return {
    index,
    callSid: report.callSid,
    outcome: report.outcome,
    endReason: report.endReason,
    ok: report.outcome !== 'connect-failed' && report.outcome !== 'error' && !closedBadly && m.violations.total === 0,
    startedAtMs: Math.round(startedAtMs),
    durationMs: report.durationMs,
    firstBotAudioMs: m.firstBotAudioMs,
    replyLatenciesMs: m.replyLatenciesMs,
    bargeInLatenciesMs: m.bargeInLatenciesMs,
    lateAudioMs: m.clears.filter((c) => c.resumedAfterMs === null).map((c) => c.lateAudioMs),
    resumedReplies: m.clears.filter((c) => c.resumedAfterMs !== null).length,
    cutReplies: m.clears.filter((c) => c.resumedAfterMs === null).length,
    underruns: m.bot.underruns,
    longestUnderrunMs: m.bot.longestUnderrunMs,
    toolCalls: m.tools.started,
    toolFailures: Object.entries(m.tools.byOutcome).reduce(
      (n, [outcome, count]) => (outcome === 'ok' ? n : n + count),
      0,
    ),
    violations: m.violations.total,
    clockMaxLagMs: m.clockMaxLagMs,
    timeline: report.timeline.filter((e) => DRAWN_KINDS.has(e.kind)).slice(0, 500),
  };
}
