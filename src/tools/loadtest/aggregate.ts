import type { LoadCallSummary } from './call-summary.js';

export interface Distribution {
  count: number;
  p50: number | null;
  p95: number | null;
  p99: number | null;
  max: number | null;
}

/**
 * Nearest-rank percentile: the smallest value with at least p% of the values at or below it, so
 * every reported figure is one that was measured. p in (0, 100]; null without values.
 */
export function percentile(sorted: readonly number[], p: number): number | null {
  if (sorted.length === 0) return null;
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil((p / 100) * sorted.length)));
  return sorted[rank - 1]!;
}

export function distribution(values: readonly number[]): Distribution {
  const sorted = values.slice().sort((a, b) => a - b);
  return {
    count: sorted.length,
    p50: percentile(sorted, 50),
    p95: percentile(sorted, 95),
    p99: percentile(sorted, 99),
    max: sorted.at(-1) ?? null,
  };
}

export interface LoadAggregate {
  calls: { total: number; ok: number; failed: number; byOutcome: Record<string, number> };
  firstBotAudioMs: Distribution;
  replyLatencyMs: Distribution;
  bargeInLatencyMs: Distribution;
  /** Per clear: bot audio of the cancelled reply received after it. */
  lateAudioMs: Distribution;
  /**
   * The bot stopped (a clear) and then resumed the reply (a false stop on noise: no words lost), or
   * stopped for good (a barge-in; in a scenario whose caller never really interrupts, such as the
   * noisy line, each of these lost the rest of a reply).
   */
  stops: { resumed: number; cut: number };
  /** Gaps in bot audio longer than a frame, over all calls. */
  underruns: { total: number; callsWithAny: number; longestMs: number };
  /** The bot's function calls (as the server marked them on the streams): all, failed, and calls with any. */
  toolCalls: { total: number; failed: number; callsWithAny: number };
  violations: number;
  /** The load generator's own clock lag, worst over all calls. */
  generatorClockMaxLagMs: number;
  /** The lag passed GENERATOR_LAG_WARNING_MS: the generator, not the server, may explain slow figures. */
  generatorOverloaded: boolean;
}

/**
 * Above this the simulator's 20 ms clock woke up more than two frames late: the generator was
 * short of CPU and its latencies include its own delay.
 */
export const GENERATOR_LAG_WARNING_MS = 50;

export function aggregate(calls: readonly LoadCallSummary[]): LoadAggregate {
  const byOutcome: Record<string, number> = {};
  for (const call of calls) byOutcome[call.outcome] = (byOutcome[call.outcome] ?? 0) + 1;
  const ok = calls.filter((c) => c.ok).length;
  const lagMs = calls.reduce((n, c) => Math.max(n, c.clockMaxLagMs), 0);
  return {
    calls: { total: calls.length, ok, failed: calls.length - ok, byOutcome },
    firstBotAudioMs: distribution(calls.flatMap((c) => (c.firstBotAudioMs === null ? [] : [c.firstBotAudioMs]))),
    replyLatencyMs: distribution(calls.flatMap((c) => c.replyLatenciesMs)),
    bargeInLatencyMs: distribution(calls.flatMap((c) => c.bargeInLatenciesMs)),
    lateAudioMs: distribution(calls.flatMap((c) => c.lateAudioMs)),
    stops: {
      resumed: calls.reduce((n, c) => n + c.resumedReplies, 0),
      cut: calls.reduce((n, c) => n + c.cutReplies, 0),
    },
    underruns: {
      total: calls.reduce((n, c) => n + c.underruns, 0),
      callsWithAny: calls.filter((c) => c.underruns > 0).length,
      longestMs: calls.reduce((n, c) => Math.max(n, c.longestUnderrunMs), 0),
    },
    toolCalls: {
      total: calls.reduce((n, c) => n + c.toolCalls, 0),
      failed: calls.reduce((n, c) => n + c.toolFailures, 0),
      callsWithAny: calls.filter((c) => c.toolCalls > 0).length,
    },
    violations: calls.reduce((n, c) => n + c.violations, 0),
    generatorClockMaxLagMs: lagMs,
    generatorOverloaded: lagMs > GENERATOR_LAG_WARNING_MS,
  };
}
