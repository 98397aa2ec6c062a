import { describe, expect, it } from 'vitest';
import { utteranceMetrics } from './call-report.js';
import { parseScenario } from './scenario.js';

describe('utteranceMetrics', () => {
  it('attributes replies and clears to the utterance they follow', () => {
    const utterances = [
      // Spoke after the greeting; the bot replied 700 ms after the voice ended.
      { clip: 'q1', startMs: 2000, endMs: 3000, firstVoicedMs: 2100, lastVoicedMs: 2900 },
      // Barged into that reply; the bot cleared 250 ms later and replied again.
      { clip: 'q2', startMs: 4000, endMs: 5000, firstVoicedMs: 4000, lastVoicedMs: 4900 },
      // Noise: no speech, so no latencies.
      { clip: 'noise', startMs: 7000, endMs: 8000, firstVoicedMs: null, lastVoicedMs: null },
    ];
    const segments = [
      { startMs: 100, endMs: 1500 },
      { startMs: 3600, endMs: 4250 },
      { startMs: 5600, endMs: 6500 },
    ];
    const clears = [
      { atMs: 4250, playedBytes: 12000, droppedBytes: 8000, lateBytes: 0, lastLateAfterMs: null, resumedAfterMs: null },
    ];
    const [q1, q2, noise] = utteranceMetrics(utterances, segments, clears);
    expect(q1).toMatchObject({ bargeIn: false, bargeInLatencyMs: null, replyLatencyMs: 700 });
    expect(q2).toMatchObject({ bargeIn: true, bargeInLatencyMs: 250, replyLatencyMs: 700 });
    expect(noise).toMatchObject({ bargeIn: false, replyLatencyMs: null, bargeInLatencyMs: null });
  });

  it('a reply that only starts after the next utterance is not credited to the earlier one', () => {
    const utterances = [
      { clip: 'a', startMs: 0, endMs: 1000, firstVoicedMs: 0, lastVoicedMs: 1000 },
      { clip: 'b', startMs: 1500, endMs: 2500, firstVoicedMs: 1500, lastVoicedMs: 2500 },
    ];
    const [a, b] = utteranceMetrics(utterances, [{ startMs: 3000, endMs: null }], []);
    expect(a!.replyLatencyMs).toBeNull();
    expect(b!.replyLatencyMs).toBe(500);
  });
});

describe('parseScenario', () => {
  it('accepts the documented step kinds and rejects unknown fields', () => {
    const scenario = parseScenario({
      clips: {
        hello: { file: 'fixtures/audio/A06_birch_canoe.ulaw', durationMs: 1500, voiced: { startMs: 0, endMs: 1500 } },
      },
      steps: [
        { do: 'wait-bot-silence', ms: 800 },
        { do: 'play', clip: 'hello' },
        { do: 'wait-bot-audio', thenMs: 400 },
        { do: 'dtmf', digits: '1#' },
        { do: 'wait', ms: 200 },
        { do: 'wait-until', atMs: 9000 },
        { do: 'hangup' },
      ],
      maxDurationMs: 60_000,
    });
    expect(scenario.steps).toHaveLength(7);
    expect(() => parseScenario({ steps: [{ do: 'play', clip: 'x', loud: true }] })).toThrow(/invalid scenario/);
    expect(() => parseScenario({ steps: [{ do: 'dtmf', digits: 'x' }] })).toThrow(/digits/);
  });
});
