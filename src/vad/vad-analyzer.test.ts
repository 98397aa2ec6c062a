import { describe, expect, it } from 'vitest';
import { DEFAULT_VAD_ANALYZER_PARAMS, VadAnalyzer, type VadEvent } from './vad-analyzer.js';

const WINDOW_MS = 32;
const LOUD = 0.85;

/** Feeds (probability, volume) pairs as consecutive 32 ms windows; returns events and states. */
function run(analyzer: VadAnalyzer, windows: Array<[number, number]>, startMs = 0) {
  const events: VadEvent[] = [];
  const states: string[] = [];
  windows.forEach(([p, v], i) => {
    const event = analyzer.update(p, v, startMs + (i + 1) * WINDOW_MS);
    if (event) events.push(event);
    states.push(analyzer.state);
  });
  return { events, states };
}

const repeat = <T>(value: T, times: number): T[] => Array.from({ length: times }, () => value);
/** Loud windows ahead of the test so the smoothed volume has settled above min_volume. */
const warmUp = (analyzer: VadAnalyzer) => run(analyzer, repeat<[number, number]>([0, LOUD], 30));

describe('VadAnalyzer', () => {
  it('uses the Pipecat defaults and converts seconds to windows like Pipecat', () => {
    const analyzer = new VadAnalyzer();
    expect(analyzer.params).toEqual({ confidence: 0.7, start_secs: 0.2, stop_secs: 0.8, min_volume: 0.6 });
    expect(DEFAULT_VAD_ANALYZER_PARAMS.confidence).toBe(0.7);
    expect(analyzer.startWindows).toBe(6); // round(200 / 32)
    expect(analyzer.stopWindows).toBe(25); // round(800 / 32)
  });

  it('reports speech-start after start_secs of speech, with the onset time', () => {
    const analyzer = new VadAnalyzer();
    warmUp(analyzer);
    const t0 = 30 * WINDOW_MS;
    const { events, states } = run(analyzer, repeat<[number, number]>([0.95, LOUD], 10), t0);
    expect(states.slice(0, 6)).toEqual(['starting', 'starting', 'starting', 'starting', 'starting', 'speaking']);
    expect(events).toEqual([{ type: 'speech-start', atMs: t0 + 6 * WINDOW_MS, sinceMs: t0 }]);
    expect(analyzer.speaking).toBe(true);
  });

  it('reports speech-stop after stop_secs of non-speech, not before', () => {
    const analyzer = new VadAnalyzer();
    warmUp(analyzer);
    run(analyzer, repeat<[number, number]>([0.95, LOUD], 10));
    const t0 = 10_000;
    const { events, states } = run(analyzer, repeat<[number, number]>([0.05, LOUD], 30), t0);
    expect(states.slice(0, 24).every((s) => s === 'stopping')).toBe(true);
    expect(events).toEqual([{ type: 'speech-stop', atMs: t0 + 25 * WINDOW_MS, sinceMs: t0 }]);
    expect(analyzer.state).toBe('quiet');
  });

  it('a single non-speech window during starting cancels the start', () => {
    const analyzer = new VadAnalyzer();
    warmUp(analyzer);
    const pattern: Array<[number, number]> = [...repeat<[number, number]>([0.9, LOUD], 5), [0.3, LOUD]];
    const { events } = run(analyzer, [...pattern, ...pattern, ...pattern]);
    expect(events).toEqual([]);
    expect(analyzer.state).toBe('quiet');
  });

  it('a single speech window during stopping keeps the turn open', () => {
    const analyzer = new VadAnalyzer();
    warmUp(analyzer);
    run(analyzer, repeat<[number, number]>([0.9, LOUD], 8));
    const gap: Array<[number, number]> = [...repeat<[number, number]>([0.1, LOUD], 20), [0.9, LOUD]];
    const { events } = run(analyzer, [...gap, ...gap, ...gap]);
    expect(events).toEqual([]);
    expect(analyzer.state).toBe('speaking');
  });

  it('requires probability >= confidence (inclusive)', () => {
    const atThreshold = new VadAnalyzer();
    warmUp(atThreshold);
    expect(run(atThreshold, repeat<[number, number]>([0.7, LOUD], 6)).events).toHaveLength(1);

    const below = new VadAnalyzer();
    warmUp(below);
    expect(run(below, repeat<[number, number]>([0.69, LOUD], 50)).events).toHaveLength(0);
  });

  it('gates on smoothed volume: confident but quiet windows are not speech', () => {
    const analyzer = new VadAnalyzer();
    expect(run(analyzer, repeat<[number, number]>([0.99, 0.5], 100)).events).toHaveLength(0);
    expect(analyzer.smoothedVolume).toBeCloseTo(0.5, 3);
  });

  it('smooths volume with factor 0.2, so loud speech after silence starts a few windows late', () => {
    const analyzer = new VadAnalyzer();
    // From 0, a steady 0.85 passes 0.6 on the 6th window: 0.85 * (1 - 0.8^6) = 0.627.
    const { states, events } = run(analyzer, repeat<[number, number]>([0.99, LOUD], 20));
    expect(states.indexOf('starting')).toBe(5);
    expect(events[0]).toEqual({ type: 'speech-start', atMs: 11 * WINDOW_MS, sinceMs: 5 * WINDOW_MS });
    // One loud click does not open the gate.
    const fresh = new VadAnalyzer();
    expect(run(fresh, [[0.99, 1], ...repeat<[number, number]>([0.99, 0.3], 20)]).events).toHaveLength(0);
  });

  it('honours custom params, including zero durations', () => {
    const eager = new VadAnalyzer({ start_secs: 0, stop_secs: 0, min_volume: 0 });
    const { events } = run(eager, [
      [0.9, 0],
      [0.1, 0],
    ]);
    expect(events.map((e) => e.type)).toEqual(['speech-start', 'speech-stop']);

    const slow = new VadAnalyzer({ start_secs: 1, confidence: 0.5, min_volume: 0 }, 32);
    expect(slow.startWindows).toBe(31);
    const r = run(slow, repeat<[number, number]>([0.6, 0], 31));
    expect(r.events).toEqual([{ type: 'speech-start', atMs: 31 * 32, sinceMs: 0 }]);
  });

  it('supports other window lengths (e.g. 16 kHz: 512 samples = 32 ms, or 20 ms windows)', () => {
    const analyzer = new VadAnalyzer({}, 20);
    expect(analyzer.startWindows).toBe(10);
    expect(analyzer.stopWindows).toBe(40);
  });

  it('rejects out-of-range params', () => {
    expect(() => new VadAnalyzer({ confidence: 1.5 })).toThrow(RangeError);
    expect(() => new VadAnalyzer({ min_volume: -0.1 })).toThrow(RangeError);
    expect(() => new VadAnalyzer({ stop_secs: Number.NaN })).toThrow(RangeError);
    expect(() => new VadAnalyzer({}, 0)).toThrow(RangeError);
  });

  it('reset returns to quiet with no volume history', () => {
    const analyzer = new VadAnalyzer();
    warmUp(analyzer);
    run(analyzer, repeat<[number, number]>([0.9, LOUD], 10));
    analyzer.reset();
    expect(analyzer.state).toBe('quiet');
    expect(analyzer.smoothedVolume).toBe(0);
  });
});
