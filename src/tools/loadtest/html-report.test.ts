import { describe, expect, it } from 'vitest';
import { aggregate } from './aggregate.js';
import type { LoadCallSummary } from './call-summary.js';
import { renderHtmlReport } from './html-report.js';
import type { LoadTestReport } from './load-test-report.js';

function call(index: number, over: Partial<LoadCallSummary> = {}): LoadCallSummary {
  return {
    index,
    callSid: `CA${index}`,
    outcome: 'completed',
    endReason: 'end of script',
    ok: true,
    startedAtMs: index * 100,
    durationMs: 8000,
    firstBotAudioMs: 400,
    replyLatenciesMs: [700 + index],
    bargeInLatenciesMs: [220],
    lateAudioMs: [0],
    resumedReplies: 0,
    cutReplies: 0,
    underruns: 0,
    longestUnderrunMs: 0,
    toolCalls: 0,
    toolFailures: 0,
    violations: 0,
    clockMaxLagMs: 2,
    timeline: [
      { atMs: 400, kind: 'bot-audio-start' },
      { atMs: 1800, kind: 'bot-audio-end' },
      { atMs: 2100, kind: 'caller-voice-start' },
      { atMs: 3400, kind: 'caller-voice-end' },
      { atMs: 4100, kind: 'bot-audio-start' },
      { atMs: 4900, kind: 'caller-voice-start' },
      { atMs: 5120, kind: 'clear-received', detail: 'dropped 2100 ms' },
      { atMs: 5120, kind: 'bot-audio-end' },
      { atMs: 6000, kind: 'caller-voice-end' },
      { atMs: 7000, kind: 'dtmf-sent', detail: '1' },
    ],
    ...over,
  };
}

function reportOf(calls: LoadCallSummary[]): LoadTestReport {
  return {
    startedAt: '2026-01-01T00:00:00.000Z',
    elapsedMs: 9000,
    config: {
      target: 'ws://example.test/ws/twilio/<script>',
      scenarioFile: 'scenarios/default.json',
      scenario: { steps: [] },
      concurrency: 3,
      calls: 3,
      rampUpMs: 1000,
      workers: 1,
    },
    stoppedEarly: false,
    generatorErrors: [],
    aggregate: aggregate(calls),
    calls,
  };
}

describe('the HTML report', () => {
  it('is one self-contained page: inline SVG histograms and a timeline row per call, text escaped', () => {
    const calls = [
      call(0),
      call(1),
      call(2, {
        ok: false,
        outcome: 'server-closed',
        endReason: 'server closed the socket (1011 boom)',
        timeline: [{ atMs: 300, kind: 'socket-closed', detail: 'by server: 1011 boom' }],
      }),
    ];
    const html = renderHtmlReport(reportOf(calls));
    expect(html).not.toMatch(/<script|<link|<img|src=|href=|@import|url\(/i);
    // Three histograms, the axis, and one row per call.
    expect(html.match(/<svg/g)).toHaveLength(3 + 1 + 3);
    expect(html).toContain('p50 701 ms');
    expect(html).toContain('#2 server-closed');
    expect(html).toContain('clear-received at 5120 ms: dropped 2100 ms');
    expect(html).toContain('&lt;script&gt;');
    expect(html).not.toContain('<script>');
  });

  it('says when the generator was overloaded and when there were no samples', () => {
    const html = renderHtmlReport(
      reportOf([call(0, { clockMaxLagMs: 200, replyLatenciesMs: [], bargeInLatenciesMs: [] })]),
    );
    expect(html).toContain('The load generator was overloaded');
    expect(html).toContain('no samples');
  });
});
