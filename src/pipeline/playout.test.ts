import { describe, expect, it } from 'vitest';
import { CLEARABLE_PACING, FRAME_BYTES, Playout, type PlayoutSink } from './playout.js';

class RecordingSink implements PlayoutSink {
  sent: Array<{ kind: 'media'; frame: Uint8Array } | { kind: 'mark'; name: string } | { kind: 'clear' }> = [];
  sendMedia(frame: Uint8Array) {
    this.sent.push({ kind: 'media', frame: frame.slice() });
  }
  sendMark(name: string) {
    this.sent.push({ kind: 'mark', name });
  }
  sendClear() {
    this.sent.push({ kind: 'clear' });
  }
  media() {
    return this.sent.filter((m) => m.kind === 'media') as Array<{ kind: 'media'; frame: Uint8Array }>;
  }
  marks() {
    return this.sent.filter((m) => m.kind === 'mark').map((m) => (m as { name: string }).name);
  }
}

function setup(options: { leadMs?: number; markEveryFrames?: number; framesPerWrite?: number } = {}) {
  let nowMs = 1000;
  const sink = new RecordingSink();
  const played: number[] = [];
  const firstFrames: number[] = [];
  const playout = new Playout(
    sink,
    { onReplyPlayed: (g) => played.push(g), onFirstFrame: (g) => firstFrames.push(g) },
    {
      now: () => nowMs,
      ...options,
    },
  );
  return {
    sink,
    playout,
    played,
    firstFrames,
    /** Moves time like the shared clock does: small ticks, pumping each time. */
    advance(ms: number) {
      for (let left = ms; left > 0; left -= Math.min(10, left)) {
        nowMs += Math.min(10, left);
        playout.pump();
      }
      if (ms === 0) playout.pump();
    },
  };
}

const audio = (ms: number, fill = 0x10) => new Uint8Array(ms * 8).fill(fill);

describe('Playout', () => {
  it('with framesPerWrite 2, sends two frames every 40 ms at real-time pace, the first ones at once', () => {
    const { sink, playout, advance } = setup({ leadMs: 100, framesPerWrite: 2 });
    const g = playout.startReply();
    playout.enqueue(g, audio(1000));
    expect(sink.media()).toHaveLength(5); // a run starts with the whole lead
    const writes: number[] = [];
    for (let tick = 0; tick < 50; tick++) {
      const before = sink.media().length;
      advance(10);
      if (sink.media().length > before) writes.push(sink.media().length - before);
    }
    // 500 ms later, two per write: between 60 and 100 ms of lead left at the carrier.
    expect(sink.media().length).toBeGreaterThanOrEqual(28);
    expect(sink.media().length).toBeLessThanOrEqual(30);
    expect(writes.every((n) => n === 2)).toBe(true);
    playout.endReply(g);
    advance(2000);
    expect(sink.media()).toHaveLength(50); // the whole reply, the last frames too
  });

  it('at the carrier pacing, sends five frames and their mark every 100 ms, never under 100 ms ahead', () => {
    let nowMs = 1000;
    const sink = new RecordingSink();
    const playout = new Playout(sink, {}, { now: () => nowMs, ...CLEARABLE_PACING });
    const g = playout.startReply();
    playout.enqueue(g, audio(2000));
    expect(sink.media()).toHaveLength(10); // a run starts with the whole lead, 200 ms
    const writes: string[] = [];
    let leastAheadMs = Number.POSITIVE_INFINITY;
    for (let tick = 0; tick < 100; tick++) {
      const before = sink.sent.length;
      nowMs += 10;
      // What the carrier holds just before the tick's write.
      leastAheadMs = Math.min(leastAheadMs, sink.media().length * 20 - (nowMs - 1000));
      playout.pump();
      // A frame is f, a mark k: what one pump sent is one write to the carrier (twilio-transport.ts).
      const write = sink.sent.slice(before).map((m) => (m.kind === 'media' ? 'f' : 'k'));
      if (write.length > 0) writes.push(write.join(''));
    }
    // One second: ten writes of five frames, each with the mark that closes them (one every 5 frames).
    expect(writes).toEqual(Array.from({ length: 10 }, () => 'fffffk'));
    expect(leastAheadMs).toBe(100);
    expect(sink.media().length * 20 - 1000).toBe(200);
  });

  it('sends whole frames immediately up to the lead, then at real-time pace', () => {
    const { sink, playout, advance } = setup({ leadMs: 100 });
    const g = playout.startReply();
    playout.enqueue(g, audio(1000));
    expect(sink.media()).toHaveLength(5); // 100 ms of lead
    for (const m of sink.media()) expect(m.frame.length).toBe(FRAME_BYTES);
    advance(20);
    expect(sink.media()).toHaveLength(6);
    advance(200);
    expect(sink.media()).toHaveLength(16);
  });

  it('cuts odd-sized chunks into whole frames and pads the tail with silence at the end', () => {
    const { sink, playout, advance } = setup({ leadMs: 1000 });
    const g = playout.startReply();
    playout.enqueue(g, audio(5).subarray(0, 37));
    expect(sink.media()).toHaveLength(0);
    playout.enqueue(g, new Uint8Array(200).fill(0x22));
    expect(sink.media()).toHaveLength(1);
    expect(
      sink
        .media()[0]!
        .frame.subarray(0, 37)
        .every((b) => b === 0x10),
    ).toBe(true);
    expect(
      sink
        .media()[0]!
        .frame.subarray(37)
        .every((b) => b === 0x22),
    ).toBe(true);
    playout.endReply(g);
    advance(0);
    const last = sink.media()[1]!.frame;
    expect(last.subarray(0, 77).every((b) => b === 0x22)).toBe(true);
    expect(last.subarray(77).every((b) => b === 0xff)).toBe(true);
  });

  it('marks progress, finishes the reply when the last mark echoes, and ignores unknown marks', () => {
    const { sink, playout, played, advance } = setup({ leadMs: 1000, markEveryFrames: 5 });
    const g = playout.startReply();
    playout.enqueue(g, audio(240));
    playout.endReply(g);
    expect(sink.media()).toHaveLength(12);
    expect(sink.marks()).toEqual([`${g}:1`, `${g}:2`, `${g}:3`]);
    playout.onMarkEchoed('nonsense');
    playout.onMarkEchoed(`${g}:1`);
    playout.onMarkEchoed(`${g}:2`);
    expect(played).toEqual([]);
    advance(240);
    playout.onMarkEchoed(`${g}:3`);
    expect(played).toEqual([g]);
    expect(playout.active).toBe(false);
  });

  it('on clear: sends clear, drops queued audio, bumps the generation and refuses late audio of the old reply', () => {
    const { sink, playout, advance } = setup({ leadMs: 100 });
    const g = playout.startReply();
    playout.enqueue(g, audio(2000));
    advance(300);
    const sentBefore = sink.media().length;
    const result = playout.clear();
    expect(result.cleared).toBe(true);
    expect(result.generation).toBe(g);
    expect(playout.generation).toBeGreaterThan(g);
    expect(sink.sent.at(-1)).toEqual({ kind: 'clear' });
    playout.enqueue(g, audio(500));
    advance(500);
    expect(sink.media().length).toBe(sentBefore);
    // The carrier echoes pending marks after a clear; they must not count as heard.
    playout.onMarkEchoed(`${g}:1`);
    expect(playout.heardMs()).toBe(0);
  });

  it('computes heard audio from elapsed time, capped by the first unechoed mark, also on the first turn', () => {
    const { playout, advance } = setup({ leadMs: 100, markEveryFrames: 5 });
    const g = playout.startReply();
    playout.enqueue(g, audio(3000));
    advance(60);
    // No mark has come back yet (first turn): elapsed time is the estimate, capped by the first mark (100 ms).
    expect(playout.heardMs()).toBe(60);
    advance(200);
    expect(playout.heardMs()).toBe(100);
    playout.onMarkEchoed(`${g}:1`);
    playout.onMarkEchoed(`${g}:2`);
    expect(playout.heardMs()).toBe(200);
    advance(30);
    expect(playout.heardMs()).toBe(230);
    const result = playout.clear();
    expect(result.heardMs).toBe(230);
    expect(result.sentMs).toBeGreaterThanOrEqual(result.heardMs);
  });

  it('does not send clear when nothing unconfirmed is at the carrier', () => {
    const { sink, playout } = setup();
    const g = playout.startReply();
    playout.enqueue(g, audio(10)); // less than a frame: nothing sent
    expect(playout.clear().cleared).toBe(false);
    expect(sink.sent.some((m) => m.kind === 'clear')).toBe(false);
  });

  it('starts a new run after an underrun so the lead is measured from now', () => {
    const { sink, playout, advance } = setup({ leadMs: 40 });
    const g = playout.startReply();
    playout.enqueue(g, audio(40));
    expect(sink.media()).toHaveLength(2);
    advance(500);
    playout.enqueue(g, audio(100));
    expect(sink.media()).toHaveLength(4); // a fresh 40 ms lead, not 500 ms of catch-up
  });
});

/** `frames` frames of audio, frame i filled with the byte i + 1, so a test can tell which frame went out. */
const numbered = (frames: number) => {
  const bytes = new Uint8Array(frames * FRAME_BYTES);
  for (let i = 0; i < frames; i++) bytes.fill(i + 1, i * FRAME_BYTES, (i + 1) * FRAME_BYTES);
  return bytes;
};
const frameIds = (sink: RecordingSink) => sink.media().map((m) => m.frame[0]!);

describe('Playout pause and resume (speech suspected over the bot)', () => {
  it('pause clears the carrier at once and sends nothing more, while the voice keeps adding audio', () => {
    const { sink, playout, advance } = setup({ leadMs: 100, markEveryFrames: 1 });
    const g = playout.startReply();
    playout.enqueue(g, numbered(20));
    advance(100);
    const sentBefore = sink.media().length;
    expect(playout.pause()).toBeDefined();
    expect(sink.sent.at(-1)).toEqual({ kind: 'clear' });
    playout.enqueue(g, numbered(5));
    advance(500);
    expect(sink.media()).toHaveLength(sentBefore);
    expect(playout.paused).toBe(true);
    expect(playout.active).toBe(true);
  });

  it('resume sends again from the first frame the caller had not heard, then the rest, with nothing lost', () => {
    const { sink, playout, played, advance } = setup({ leadMs: 100, markEveryFrames: 1 });
    const g = playout.startReply();
    playout.enqueue(g, numbered(20));
    advance(100);
    // The carrier confirms the first three frames played; two more are in flight (the lead).
    for (const name of sink.marks().slice(0, 3)) playout.onMarkEchoed(name);
    const heardAtMs = playout.pause()!;
    expect(heardAtMs).toBeGreaterThanOrEqual(60);
    const heardFrames = heardAtMs / 20;
    const sentBeforePause = frameIds(sink);
    advance(300);
    playout.resume();
    playout.endReply(g);
    for (let i = 0; i < 100 && played.length === 0; i++) {
      advance(20);
      for (const name of sink.marks()) playout.onMarkEchoed(name);
    }
    expect(played).toEqual([g]);
    const afterPause = frameIds(sink).slice(sentBeforePause.length);
    // What was heard, then everything from the first unheard frame: each frame of the reply once, in order.
    expect([...sentBeforePause.slice(0, heardFrames), ...afterPause]).toEqual(
      Array.from({ length: 20 }, (_, i) => i + 1),
    );
  });

  it('a barge-in confirmed while paused reports the heard point and sends no second clear', () => {
    const { sink, playout, advance } = setup({ leadMs: 100, markEveryFrames: 1 });
    const g = playout.startReply();
    playout.enqueue(g, numbered(20));
    advance(60);
    const heardAtMs = playout.pause()!;
    advance(200);
    const clearsBefore = sink.sent.filter((m) => m.kind === 'clear').length;
    const result = playout.clear();
    expect(result.heardMs).toBe(heardAtMs);
    expect(result.cleared).toBe(false);
    expect(sink.sent.filter((m) => m.kind === 'clear')).toHaveLength(clearsBefore);
    expect(playout.paused).toBe(false);
  });

  it('pause with nothing playing does nothing', () => {
    const { sink, playout } = setup();
    expect(playout.pause()).toBeUndefined();
    expect(sink.sent).toEqual([]);
  });
});
