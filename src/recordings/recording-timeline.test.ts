import { describe, expect, it } from 'vitest';
import { decodeMulaw, encodeMulaw } from '../audio/mulaw.js';
import { RecordingTimeline, type TimelineChunk } from './recording-timeline.js';

/** A frame whose every sample is `value` (after mu-law), so placement is visible in the PCM. */
function frame(value: number): Uint8Array {
  return encodeMulaw(new Int16Array(160).fill(value));
}
const level = (value: number) => decodeMulaw(frame(value))[0]!;

/** The value of each 20 ms slot of a track. */
function slots(track: Int16Array): number[] {
  const out: number[] = [];
  for (let i = 0; i < track.length; i += 160) out.push(track[i]!);
  return out;
}

function concat(chunks: Array<TimelineChunk | undefined>): TimelineChunk {
  const parts = chunks.filter((c): c is TimelineChunk => c !== undefined);
  const join = (key: keyof TimelineChunk) => {
    const total = parts.reduce((n, c) => n + c[key].length, 0);
    const out = new Int16Array(total);
    let offset = 0;
    for (const c of parts) {
      out.set(c[key], offset);
      offset += c[key].length;
    }
    return out;
  };
  return { caller: join('caller'), bot: join('bot'), mixed: join('mixed') };
}

describe('RecordingTimeline', () => {
  const A = level(1000);
  const B = level(2000);

  it('keeps jittery caller frames contiguous, and starts a new stretch after a real gap', () => {
    const timeline = new RecordingTimeline({ holdbackMs: 0 });
    // Frames 0–4 with jitter of up to 15 ms, then a 300 ms hole, then two more.
    for (const [i, at] of [0, 35, 41, 60, 95].entries()) timeline.addCaller(frame(1000 + i), at);
    timeline.addCaller(frame(1000), 400);
    timeline.addCaller(frame(1000), 420);
    const out = timeline.drainAll(440);
    expect(slots(out!.caller)).toEqual([
      level(1000),
      level(1001),
      level(1002),
      level(1003),
      level(1004),
      0,
      0,
      0,
      0,
      0,
      0,
      0,
      0,
      0,
      0,
      0,
      0,
      0,
      0,
      0,
      A,
      A,
    ]);
  });

  it('puts a backlog of caller frames read at once where it was spoken, ending at its arrival', () => {
    const timeline = new RecordingTimeline({ holdbackMs: 200 });
    timeline.addCaller(frame(1000), 0);
    timeline.addCaller(frame(1000), 20);
    // The process stalled for 300 ms: the 15 frames the caller sent meanwhile are read at once,
    // and the caller goes on at 20 ms a frame.
    for (let i = 0; i < 15; i++) timeline.addCaller(frame(3000 + i * 600), 340);
    for (let i = 0; i < 5; i++) timeline.addCaller(frame(2000), 360 + i * 20);
    const out = timeline.drainAll(460);
    const placed = slots(out!.caller);
    // In order and contiguous, the backlog ending in the slot it arrived in (340 ms: slot 17),
    // so what follows is where it was spoken too; without the pull-back the backlog would start
    // at 340 ms and every later frame would be 280 ms late.
    expect(placed).toHaveLength(23);
    expect(placed.slice(0, 3)).toEqual([A, A, 0]);
    expect(placed.slice(3, 18)).toEqual(Array.from({ length: 15 }, (_, i) => level(3000 + i * 600)));
    expect(placed.slice(18)).toEqual(Array(5).fill(B));
  });

  it('moves a backlog no earlier than the audio already written', () => {
    const timeline = new RecordingTimeline({ holdbackMs: 0 });
    for (let i = 0; i < 5; i++) timeline.addCaller(frame(1000), i * 20);
    const written = timeline.drain(100);
    // 10 frames arrive together at 120 ms: 100 ms of them fit before their arrival, after what
    // was written; the rest follow on, as close to their arrival as the written audio allows.
    for (let i = 0; i < 10; i++) timeline.addCaller(frame(2000), 120);
    const all = concat([written, timeline.drainAll(300)]);
    const placed = slots(all.caller);
    expect(placed.slice(0, 5)).toEqual(Array(5).fill(A));
    expect(placed.slice(5, 15)).toEqual(Array(10).fill(level(2000)));
  });

  it('plays bot frames back to back from when they were sent, and a clear drops what had not played', () => {
    const timeline = new RecordingTimeline({ holdbackMs: 0 });
    // A burst of 10 frames at 100 ms (the playout lead), then a clear at 200 ms: 5 frames played.
    for (let i = 0; i < 10; i++) timeline.addBot(frame(2000), 100);
    timeline.clearBot(200);
    // The next reply starts at 300 ms.
    timeline.addBot(frame(1000), 300);
    const out = timeline.drainAll(400);
    expect(slots(out!.bot)).toEqual([0, 0, 0, 0, 0, B, B, B, B, B, 0, 0, 0, 0, 0, A, 0, 0, 0, 0]);
  });

  it('mixes both tracks sample by sample, clamped to 16 bits', () => {
    const timeline = new RecordingTimeline({ holdbackMs: 0 });
    timeline.addCaller(frame(30000), 0);
    timeline.addBot(frame(30000), 0);
    timeline.addCaller(frame(1000), 20);
    timeline.addBot(frame(-2000), 20);
    const out = timeline.drainAll(40)!;
    expect(slots(out.mixed)).toEqual([32767, level(1000) + level(-2000)]);
  });

  it('holds recent frames back, so late caller frames and clears still land; never hands out a slot twice', () => {
    const timeline = new RecordingTimeline({ holdbackMs: 200 });
    for (let i = 0; i < 50; i++) timeline.addCaller(frame(1000), i * 20);
    for (let i = 0; i < 20; i++) timeline.addBot(frame(2000), 900);
    const first = timeline.drain(1000);
    // 1000 ms minus 200 ms of holdback.
    expect(first!.caller.length).toBe(800 * 8);
    expect(timeline.drain(1000)).toBeUndefined();
    // The bot's burst started at 900 ms: still held, so this clear at 960 ms drops its tail.
    timeline.clearBot(960);
    const rest = timeline.drainAll(1400);
    const all = concat([first, rest]);
    expect(all.caller.length).toBe(1400 * 8);
    const botSlots = slots(all.bot);
    expect(botSlots.filter((v) => v === B)).toHaveLength(3);
    expect(botSlots.indexOf(B)).toBe(45);
  });

  it('drops bot audio that would have played after the call ended', () => {
    const timeline = new RecordingTimeline({ holdbackMs: 0 });
    timeline.addCaller(frame(1000), 0);
    for (let i = 0; i < 10; i++) timeline.addBot(frame(2000), 0);
    const out = timeline.drainAll(60)!;
    expect(slots(out.bot)).toEqual([B, B, B]);
    expect(out.caller.length).toBe(out.bot.length);
  });
});
