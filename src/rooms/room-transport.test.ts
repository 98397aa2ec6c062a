import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { decodeMulaw, encodeMulaw } from '../audio/mulaw.js';
import type { CallTransportHandler } from '../pipeline/call-transport.js';
import { type RoomListener, RoomTransport } from './room-transport.js';

function recorder(): CallTransportHandler & { frames: Int16Array[]; marks: string[]; ended: string[] } {
  const frames: Int16Array[] = [];
  const marks: string[] = [];
  const ended: string[] = [];
  return {
    frames,
    marks,
    ended,
    onStart: () => undefined,
    onAudio: (mulaw) => frames.push(decodeMulaw(mulaw)),
    onDtmf: () => undefined,
    onMark: (name) => marks.push(name),
    onEnd: (reason) => ended.push(reason),
  };
}

function listener(): RoomListener & { played: number; clears: number } {
  return {
    played: 0,
    clears: 0,
    playBotAudio() {
      this.played += 1;
    },
    clearBotAudio() {
      this.clears += 1;
    },
  };
}

describe('RoomTransport', () => {
  let nowMs = 0;
  beforeEach(() => {
    vi.useFakeTimers();
    nowMs = 0;
  });
  afterEach(() => vi.useRealTimers());
  const advance = (ms: number) => {
    for (let i = 0; i < ms; i += 10) {
      nowMs += 10;
      vi.advanceTimersByTime(10);
    }
  };

  it('mixes members into one frame per 20 ms of wall time, and nothing while the room is empty', () => {
    const transport = new RoomTransport(
      () => undefined,
      () => nowMs,
    );
    const bot = recorder();
    transport.attach(bot);
    advance(100);
    expect(bot.frames).toHaveLength(0);
    const a = transport.addMember(listener());
    const b = transport.addMember(listener());
    a.push(new Int16Array(160).fill(1000));
    b.push(new Int16Array(160).fill(-400));
    advance(100);
    expect(bot.frames).toHaveLength(5);
    // mu-law quantises: the mix of 1000 and -400 comes back within a step of 600.
    expect(Math.abs(bot.frames[0]![0]! - 600)).toBeLessThan(20);
    expect(bot.frames[1]!.every((s) => s === 0)).toBe(true);
  });

  it('echoes each mark once the audio before it has played, and all of them at once on clear', () => {
    const transport = new RoomTransport(
      () => undefined,
      () => nowMs,
    );
    const bot = recorder();
    const member = listener();
    transport.attach(bot);
    transport.addMember(member);
    const frame = encodeMulaw(new Int16Array(160).fill(500));
    for (let i = 0; i < 5; i++) transport.sendMedia(frame);
    transport.sendMark('m1');
    for (let i = 0; i < 5; i++) transport.sendMedia(frame);
    transport.sendMark('m2');
    expect(member.played).toBe(10);
    advance(90);
    expect(bot.marks).toEqual([]);
    advance(20);
    expect(bot.marks).toEqual(['m1']);
    transport.sendClear();
    expect(bot.marks).toEqual(['m1', 'm2']);
    expect(member.clears).toBe(1);
  });

  it('tells the session once when the room ends, and sends nothing after', () => {
    const closes: string[] = [];
    const transport = new RoomTransport(
      (_code, reason) => closes.push(reason),
      () => nowMs,
    );
    const bot = recorder();
    const member = listener();
    transport.attach(bot);
    transport.addMember(member);
    transport.close(1000, 'max_duration');
    expect(closes).toEqual(['max_duration']);
    transport.end('max_duration');
    transport.end('again');
    transport.sendMedia(encodeMulaw(new Int16Array(160)));
    expect(bot.ended).toEqual(['max_duration']);
    expect(member.played).toBe(0);
  });
});
