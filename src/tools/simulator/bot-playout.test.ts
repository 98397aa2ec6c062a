import { describe, expect, it } from 'vitest';
import { BotPlayout, MAX_BUFFERED_BYTES } from './bot-playout.js';

function b64(bytes: number, fill = 0x10): string {
  return Buffer.alloc(bytes, fill).toString('base64');
}

function setup() {
  const echoed: string[] = [];
  const playout = new BotPlayout((name) => echoed.push(name));
  const frame = new Uint8Array(160);
  return { echoed, playout, frame };
}

describe('BotPlayout', () => {
  it('echoes a mark at once when nothing is queued or playing', () => {
    const { echoed, playout } = setup();
    playout.mark('idle');
    expect(echoed).toEqual(['idle']);
  });

  it('echoes a mark only once the audio queued before it has finished playing', () => {
    const { echoed, playout, frame } = setup();
    expect(playout.enqueueBase64(b64(400))).toBe('ok');
    playout.mark('after-400');
    expect(playout.tick(frame)).toBe(160);
    expect(playout.tick(frame)).toBe(160);
    expect(playout.tick(frame)).toBe(80); // last 80 bytes start playing
    expect(echoed).toEqual([]);
    expect(playout.playing).toBe(true);
    expect(playout.tick(frame)).toBe(0); // ...and have finished by the next tick
    expect(echoed).toEqual(['after-400']);
    expect(playout.playing).toBe(false);
  });

  it('keeps marks in FIFO order, each after its own audio', () => {
    const { echoed, playout, frame } = setup();
    playout.enqueueBase64(b64(160));
    playout.mark('a');
    playout.enqueueBase64(b64(160));
    playout.mark('b');
    playout.tick(frame);
    expect(echoed).toEqual([]);
    playout.tick(frame);
    expect(echoed).toEqual(['a']);
    playout.tick(frame);
    expect(echoed).toEqual(['a', 'b']);
  });

  it('a mark sent while the last frame is playing waits for it', () => {
    const { echoed, playout, frame } = setup();
    playout.enqueueBase64(b64(160));
    playout.tick(frame);
    playout.mark('tail');
    expect(echoed).toEqual([]);
    playout.tick(frame);
    expect(echoed).toEqual(['tail']);
  });

  it('clear drops queued and playing audio and echoes every pending mark immediately', () => {
    const { echoed, playout, frame } = setup();
    playout.enqueueBase64(b64(1600));
    playout.mark('x');
    playout.mark('y');
    playout.tick(frame);
    expect(playout.clear()).toBe(1600);
    expect(echoed).toEqual(['x', 'y']);
    expect(playout.playing).toBe(false);
    expect(playout.tick(frame)).toBe(0);
    playout.mark('z');
    expect(echoed).toEqual(['x', 'y', 'z']);
  });

  it('plays bytes in arrival order across buffer compaction and growth', () => {
    const { playout, frame } = setup();
    const out: number[] = [];
    let value = 0;
    // Interleave enqueues and ticks so the ring compacts and grows; 300-byte chunks are not frame aligned.
    for (let round = 0; round < 400; round++) {
      const chunk = Buffer.alloc(300);
      for (let i = 0; i < chunk.length; i++) chunk[i] = (value++ % 251) & 0xff;
      playout.enqueueBase64(chunk.toString('base64'));
      const n = playout.tick(frame);
      for (let i = 0; i < n; i++) out.push(frame[i]!);
    }
    for (;;) {
      const n = playout.tick(frame);
      if (n === 0) break;
      for (let i = 0; i < n; i++) out.push(frame[i]!);
    }
    expect(out.length).toBe(400 * 300);
    expect(out.every((byte, i) => byte === i % 251)).toBe(true);
  });

  it('flags payloads that are not clean base64, and more than 10 minutes of buffer', () => {
    const { playout } = setup();
    expect(playout.enqueueBase64('!!!!')).toBe('invalid-base64');
    expect(playout.enqueueBase64(b64(MAX_BUFFERED_BYTES - 10))).toBe('ok');
    expect(playout.enqueueBase64(b64(160))).toBe('overflow');
  });
});
