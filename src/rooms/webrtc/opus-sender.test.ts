import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { SAMPLES_PER_FRAME_8K } from '../../audio/frames.js';
import { OPUS_TICKS_PER_FRAME, OpusDecoder8k } from '../../audio/opus.js';
import { type OpusRtpFrame, OpusSender } from './opus-sender.js';

/** The bot's frames to one browser: paced by the RTP clock, dropped on a cut, timestamps across pauses. */
describe('OpusSender', () => {
  let nowMs = 0;
  let sent: Array<OpusRtpFrame & { atMs: number }>;
  let sender: OpusSender;
  /** 20 ms of a 400 Hz tone (Opus keeps no DC, so a constant would decode as silence). */
  const frame = () =>
    Int16Array.from({ length: SAMPLES_PER_FRAME_8K }, (_, i) =>
      Math.round(8000 * Math.sin((2 * Math.PI * 400 * i) / 8000)),
    );

  beforeEach(() => {
    vi.useFakeTimers();
    nowMs = 1000;
    sent = [];
    sender = new OpusSender(
      (f) => sent.push({ ...f, atMs: nowMs }),
      () => nowMs,
    );
  });
  afterEach(() => {
    sender.close();
    vi.useRealTimers();
  });

  const advance = (ms: number) => {
    for (let i = 0; i < ms; i++) {
      nowMs += 1;
      vi.advanceTimersByTime(1);
    }
  };

  it('sends a frame that comes in time at once, and holds a burst to one frame per 20 ms', () => {
    sender.push(frame());
    expect(sent).toHaveLength(1);
    expect(sent[0]!.marker).toBe(true);
    for (let i = 0; i < 4; i++) sender.push(frame());
    expect(sent).toHaveLength(1);
    advance(80);
    expect(sent.map((f) => f.atMs - 1000)).toEqual([0, 20, 40, 60, 80]);
    for (let i = 1; i < sent.length; i++) {
      expect(sent[i]!.sequenceNumber).toBe((sent[i - 1]!.sequenceNumber + 1) & 0xffff);
      expect(sent[i]!.timestamp).toBe((sent[i - 1]!.timestamp + OPUS_TICKS_PER_FRAME) >>> 0);
      expect(sent[i]!.marker).toBe(false);
    }
  });

  it('drops what it holds on clear and ends with a few frames of silence; nothing of the cut reply follows', () => {
    sender.push(frame());
    for (let i = 0; i < 9; i++) sender.push(frame());
    advance(20);
    expect(sent).toHaveLength(2);
    sender.clear();
    advance(200);
    // Only silence after the cut: the 8 frames held were dropped.
    const after = sent.slice(2);
    expect(after.length).toBe(3);
    expect(sender.stats.framesDropped).toBe(8);
    const decoder = new OpusDecoder8k();
    const peaks = sent.map((f) => Math.max(...decoder.decode(f.payload)!.map(Math.abs)));
    decoder.free();
    expect(peaks[1]).toBeGreaterThan(500);
    // The decoder is down to a ringing 26 dB below the tone from the second silent frame on.
    expect(Math.max(...peaks.slice(3))).toBeLessThan(400);
  });

  it('a talkspurt after a pause is marked and its timestamp moves on by the pause', () => {
    sender.push(frame());
    advance(20);
    sender.push(frame());
    advance(1000);
    sender.push(frame());
    const [first, second, third] = sent;
    expect(second!.marker).toBe(false);
    expect(third!.marker).toBe(true);
    const ticks = (third!.timestamp - second!.timestamp) >>> 0;
    expect(ticks).toBeGreaterThanOrEqual(48 * 1000);
    expect(ticks).toBeLessThanOrEqual(48 * 1040);
    expect(first).toBeDefined();
  });
});
