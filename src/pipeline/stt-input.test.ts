import { describe, expect, it } from 'vitest';
import { MULAW_8K } from '../audio/audio-format.js';
import { fromTelephony } from '../audio/format-converter.js';
import type { SttStream } from '../providers/types.js';
import { SttInput } from './stt-input.js';

/** A stream that notes what reaches it: each frame by its first byte, each Finalize as 'F'. */
function recordingStream(): SttStream & { seen: Array<number | 'F'> } {
  const seen: Array<number | 'F'> = [];
  return {
    seen,
    write: (audio) => seen.push(audio[0]!),
    finalize: () => seen.push('F'),
    close: async () => undefined,
  };
}

const frame = (value: number) => new Uint8Array(160).fill(value);

describe('SttInput', () => {
  it('holds a Finalize asked for while the stream opens in its place: after the audio before it, before the audio after it', () => {
    const input = new SttInput(100);
    input.write(frame(1));
    input.write(frame(2));
    input.finalize();
    input.write(frame(3)); // a new utterance, begun before the stream opened
    const stream = recordingStream();
    input.open(stream, fromTelephony(MULAW_8K));
    expect(stream.seen).toEqual([1, 2, 'F', 3]);
    input.write(frame(4));
    input.finalize();
    expect(stream.seen).toEqual([1, 2, 'F', 3, 4, 'F']);
  });

  it('keeps copies of lent frames, the oldest up to its limit, and a Finalize even past the limit; asks once for two in a row', () => {
    const input = new SttInput(2);
    const lent = frame(1);
    input.write(lent);
    lent.fill(2);
    input.write(lent);
    lent.fill(3);
    input.write(lent); // over the limit: dropped
    input.finalize();
    input.finalize();
    const stream = recordingStream();
    input.open(stream, fromTelephony(MULAW_8K));
    expect(stream.seen).toEqual([1, 2, 'F']);
  });

  it('keeps its own copy of a frame it holds while the stream opens (frames are lent)', () => {
    const input = new SttInput(10);
    const lent = frame(7);
    input.write(lent);
    lent.fill(8);
    const stream = recordingStream();
    input.open(stream, fromTelephony(MULAW_8K));
    expect(stream.seen).toEqual([7]);
  });

  it('once stopped, passes nothing on and forgets what it held', () => {
    const input = new SttInput(10);
    input.write(frame(1));
    input.finalize();
    expect(input.stop()).toBeUndefined();
    const stream = recordingStream();
    input.open(stream, fromTelephony(MULAW_8K));
    input.write(frame(2));
    input.finalize();
    expect(stream.seen).toEqual([]);
  });
});
