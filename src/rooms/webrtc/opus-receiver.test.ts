import { describe, expect, it } from 'vitest';
import { SAMPLES_PER_FRAME_8K } from '../../audio/frames.js';
import { OpusEncoder8k } from '../../audio/opus.js';
import { OpusReceiver } from './opus-receiver.js';

/** A browser's microphone over UDP: reordered packets put back in order, lost ones as silence. */
describe('OpusReceiver', () => {
  const encoder = new OpusEncoder8k();
  /** Packet n carries a 400 Hz tone at level n * 1000, so the output's order shows. */
  const packets = Array.from({ length: 12 }, (_, n) =>
    Uint8Array.from(
      encoder.encode(
        Int16Array.from({ length: SAMPLES_PER_FRAME_8K }, (_, i) =>
          Math.round((n + 1) * 1000 * Math.sin((2 * Math.PI * 400 * i) / 8000)),
        ),
      ),
    ),
  );
  const levels = (frames: Int16Array[]) => frames.map((f) => Math.round(Math.max(...f.map(Math.abs)) / 500));

  function receive(order: number[], base = 65530) {
    const frames: Int16Array[] = [];
    const receiver = new OpusReceiver((pcm) => frames.push(Int16Array.from(pcm)));
    for (const n of order) receiver.push((base + n) & 0xffff, packets[n]!);
    return { frames, stats: receiver.stats };
  }

  it('plays packets in sequence order across the 16-bit wrap, whatever order they came in', () => {
    const inOrder = receive([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    const shuffled = receive([0, 2, 1, 3, 5, 4, 6, 8, 7, 9]);
    expect(shuffled.frames).toHaveLength(10);
    expect(levels(shuffled.frames)).toEqual(levels(inOrder.frames));
    expect(shuffled.stats.lost).toBe(0);
  });

  it('a packet missing for more than 3 packets becomes 20 ms of silence, in its place; a late one is dropped', () => {
    const { frames, stats } = receive([0, 1, 3, 4, 5, 6, 7, 2, 8]);
    expect(frames).toHaveLength(9);
    expect(frames[2]!.every((s) => s === 0)).toBe(true);
    expect(stats.lost).toBe(1);
    expect(stats.late).toBe(1);
  });
});
