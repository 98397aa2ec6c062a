import { describe, expect, it } from 'vitest';
import type { CallReport } from '../simulator/call-report.js';
import { aggregate, distribution, percentile } from './aggregate.js';
import { summarizeCall } from './call-summary.js';

/** A CallReport with only what the summary reads, the rest neutral. */
function report(over: {
  outcome?: CallReport['outcome'];
  close?: CallReport['close'];
  reply?: number[];
  bargeIn?: number[];
  late?: number[];
  resumedAfter?: Array<number | null>;
  underruns?: number;
  longest?: number;
  violations?: number;
  first?: number | null;
  lagMs?: number;
}): CallReport {
  return {
    callSid: 'CA1',
    streamSid: 'MZ1',
    accountSid: 'AC1',
    wssUrl: 'ws://x',
    customParameters: {},
    outcome: over.outcome ?? 'completed',
    endReason: 'end of script',
    setup: { webhookMs: null, connectMs: 3 },
    durationMs: 10_000,
    close: over.close ?? { code: 1000, reason: '', by: 'caller' },
    timeline: [
      { atMs: 0, kind: 'start-sent' },
      { atMs: 100, kind: 'bot-audio-start' },
      { atMs: 150, kind: 'mark-received' },
      { atMs: 900, kind: 'bot-audio-end' },
    ],
    timelineDropped: 0,
    metrics: {
      firstBotAudioMs: over.first === undefined ? 100 : over.first,
      utterances: [],
      replyLatenciesMs: over.reply ?? [],
      bargeInLatenciesMs: over.bargeIn ?? [],
      clears: (over.late ?? []).map((lateAudioMs, i) => ({
        atMs: 1,
        playedAudioMs: 0,
        droppedAudioMs: 0,
        lateAudioMs,
        lastLateAudioAfterMs: null,
        resumedAfterMs: over.resumedAfter?.[i] ?? null,
      })),
      clearWindowMs: 500,
      bot: {
        segments: 1,
        receivedAudioMs: 800,
        playedAudioMs: 800,
        underruns: over.underruns ?? 0,
        underrunTotalMs: 0,
        longestUnderrunMs: over.longest ?? 0,
        shortFrames: 0,
        keysHeard: '',
      },
      marks: { received: 1, echoed: 1 },
      tools: { started: 0, byOutcome: {}, byTool: {} },
      caller: { framesSent: 500, dtmfSent: 0 },
      violations: { total: over.violations ?? 0, byKind: {}, samples: [] },
      clockMaxLagMs: over.lagMs ?? 4,
    },
  };
}

describe('percentiles', () => {
  it('are nearest-rank: always a measured value', () => {
    const sorted = [10, 20, 30, 40, 50, 60, 70, 80, 90, 100];
    expect(percentile(sorted, 50)).toBe(50);
    expect(percentile(sorted, 95)).toBe(100);
    expect(percentile(sorted, 99)).toBe(100);
    expect(percentile([7], 99)).toBe(7);
    expect(percentile([], 50)).toBeNull();
    const hundred = Array.from({ length: 100 }, (_, i) => i + 1);
    expect(distribution(hundred.slice().reverse())).toEqual({ count: 100, p50: 50, p95: 95, p99: 99, max: 100 });
  });
});

describe('aggregate', () => {
  it('counts failures by kind, pools latencies across calls, and keeps only drawable timeline events', () => {
    const calls = [
      summarizeCall(report({ reply: [800, 900], bargeIn: [230], late: [0] }), 0, 0),
      summarizeCall(report({ reply: [1000], bargeIn: [250], late: [40], underruns: 2, longest: 60 }), 1, 100),
      summarizeCall(report({ outcome: 'connect-failed', close: null, first: null }), 2, 200),
      summarizeCall(
        report({ outcome: 'server-closed', close: { code: 4429, reason: 'too many messages', by: 'server' } }),
        3,
        300,
      ),
      summarizeCall(report({ violations: 3 }), 4, 400),
    ];
    expect(calls.map((c) => c.ok)).toEqual([true, true, false, false, false]);
    expect(calls[0]!.timeline.map((e) => e.kind)).toEqual(['bot-audio-start', 'bot-audio-end']);

    const a = aggregate(calls);
    expect(a.calls).toEqual({
      total: 5,
      ok: 2,
      failed: 3,
      byOutcome: { completed: 3, 'connect-failed': 1, 'server-closed': 1 },
    });
    expect(a.replyLatencyMs).toEqual({ count: 3, p50: 900, p95: 1000, p99: 1000, max: 1000 });
    expect(a.bargeInLatencyMs.p50).toBe(230);
    expect(a.lateAudioMs).toEqual({ count: 2, p50: 0, p95: 40, p99: 40, max: 40 });
    expect(a.firstBotAudioMs.count).toBe(4);
    expect(a.underruns).toEqual({ total: 2, callsWithAny: 1, longestMs: 60 });
    expect(a.violations).toBe(3);
    expect(a.generatorClockMaxLagMs).toBe(4);
    expect(a.generatorOverloaded).toBe(false);
  });

  it('counts stops the bot resumed from apart from stops that cut a reply off, and late audio only after the latter', () => {
    const calls = [
      summarizeCall(report({ late: [180, 0, 60], resumedAfter: [150, null, null] }), 0, 0),
      summarizeCall(report({ late: [200], resumedAfter: [120] }), 1, 0),
    ];
    const a = aggregate(calls);
    expect(a.stops).toEqual({ resumed: 2, cut: 2 });
    expect(a.lateAudioMs).toEqual({ count: 2, p50: 0, p95: 60, p99: 60, max: 60 });
  });

  it('treats a normal close by either side and a hang-up at the end of a duration run as ok', () => {
    const calls = [
      summarizeCall(report({ outcome: 'server-closed', close: { code: 1000, reason: 'bye', by: 'server' } }), 0, 0),
      summarizeCall(report({ outcome: 'aborted', close: { code: 1000, reason: '', by: 'caller' } }), 1, 0),
      summarizeCall(report({ outcome: 'error', close: null }), 2, 0),
    ];
    expect(calls.map((c) => c.ok)).toEqual([true, true, false]);
    expect(aggregate(calls).calls.byOutcome).toEqual({ 'server-closed': 1, aborted: 1, error: 1 });
  });

  it('flags an overloaded generator from the worst clock lag of any call', () => {
    const a = aggregate([summarizeCall(report({ lagMs: 3 }), 0, 0), summarizeCall(report({ lagMs: 180 }), 1, 0)]);
    expect(a.generatorClockMaxLagMs).toBe(180);
    expect(a.generatorOverloaded).toBe(true);
  });

  it('has empty distributions, not zeros, when nothing was measured', () => {
    const a = aggregate([]);
    expect(a.calls).toEqual({ total: 0, ok: 0, failed: 0, byOutcome: {} });
    expect(a.replyLatencyMs).toEqual({ count: 0, p50: null, p95: null, p99: null, max: null });
    expect(a.underruns).toEqual({ total: 0, callsWithAny: 0, longestMs: 0 });
  });
});
