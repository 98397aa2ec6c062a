import { describe, expect, it } from 'vitest';
import { MAX_SUSPICION_RECORDS, SuspicionTrace } from './suspicion-trace.js';

describe('SuspicionTrace', () => {
  it("puts VAD times on the caller's audio clock and measures the lag from the window's last frame", () => {
    const trace = new SuspicionTrace();
    // Five frames before the VAD is fed (the call was still setting up), then the VAD's frames.
    for (let i = 0; i < 5; i++) trace.heard(20, 1000 + 20 * i);
    trace.vadStarted();
    for (let i = 5; i < 20; i++) trace.heard(20, 1000 + 20 * i);
    // The VAD's window ending at 64 ms of its audio is 164 ms on the caller's clock: frame 8
    // (160-180 ms) completed it, arriving at 1160 ms.
    trace.record(64, 'paused', 1190);
    expect(trace.records).toEqual([{ atAudioMs: 164, outcome: 'paused', lagMs: 30 }]);
    // A window ending exactly on a frame's end belongs to that frame.
    trace.record(60, 'speech-start', 1200);
    expect(trace.records[1]).toEqual({ atAudioMs: 160, outcome: 'speech-start', lagMs: 60 });
  });

  it('keeps the latest records and says when a frame is too old to time', () => {
    const trace = new SuspicionTrace();
    trace.vadStarted();
    for (let i = 0; i < 1000; i++) trace.heard(20, 20 * i);
    trace.record(40, 'refused: too quiet', 20_000);
    expect(trace.records[0]!.lagMs).toBeNull();
    for (let i = 0; i < MAX_SUSPICION_RECORDS + 5; i++) trace.record(19_000 + i, 'held', 20_000);
    expect(trace.records).toHaveLength(MAX_SUSPICION_RECORDS);
    expect(trace.records.at(-1)!.atAudioMs).toBe(19_000 + MAX_SUSPICION_RECORDS + 4);
    // 19,036 ms of audio came in the frame of 19,020-19,040 ms, which arrived at 19,020.
    expect(trace.records.at(-1)!.lagMs).toBe(980);
  });
});
