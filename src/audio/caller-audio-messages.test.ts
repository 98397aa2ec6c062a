import { describe, expect, it } from 'vitest';
import { CallerAudioMessages } from './caller-audio-messages.js';
import { linearToMulawByte } from './mulaw.js';

/** A 20 ms frame of a square wave at `amplitude` (RMS = amplitude), or digital silence at 0. */
function frame(amplitude: number): Uint8Array {
  return Uint8Array.from({ length: 160 }, (_, i) => linearToMulawByte(i % 2 === 0 ? amplitude : -amplitude));
}
/** Quiet above the silent floor (RMS 60, about -55 dBFS): a noisy line, or speech too soft to count. */
const QUIET = frame(60);
/** Digital silence, and a quiet line's hiss (RMS 25, about -62 dBFS), both under the floor. */
const SILENCE = frame(0);
const HISS = frame(25);
const SPEECH = frame(3000);

function run(edgesAtOnce: boolean, frames: Uint8Array[]): number[] {
  const sizes: number[] = [];
  const messages = new CallerAudioMessages((mulaw) => sizes.push(mulaw.length), edgesAtOnce);
  for (const f of frames) messages.push(f);
  return sizes;
}
const times = <T>(n: number, value: T): T[] => Array.from({ length: n }, () => value);

describe('CallerAudioMessages', () => {
  it('sends a listening caller in 100 ms messages and speech in pairs, never holding speech behind quiet', () => {
    // 13 frames of quiet: two 100 ms messages, three frames waiting; the first speech frame takes them along.
    const sizes = run(false, [...times(13, QUIET), ...times(5, SPEECH)]);
    expect(sizes).toEqual([800, 800, 640, 320, 320]);
  });

  it('sends silence in 200 ms messages, and what waits at once when louder quiet comes after 100 ms of it', () => {
    expect(run(false, times(25, SILENCE))).toEqual([1600, 1600]);
    expect(run(true, times(25, HISS))).toEqual([1600, 1600]);
    // 15 frames of silence: one 200 ms message, five frames waiting (100 ms): the first louder
    // quiet frame sends them along at once; then louder quiet in 100 ms.
    expect(run(false, [...times(15, SILENCE), ...times(6, QUIET)])).toEqual([1600, 960, 800]);
    // Speech never waits behind silence: its first frame takes what waits along.
    expect(run(true, [...times(12, SILENCE), SPEECH])).toEqual([1600, 480]);
    // Less than 100 ms waiting: louder quiet waits with it until it makes 100 ms.
    expect(run(false, [...times(12, SILENCE), ...times(4, QUIET)])).toEqual([1600, 800]);
    // Silence after speech keeps its edge in pairs (as any quiet), then 200 ms.
    expect(run(false, [...times(2, SPEECH), ...times(70, SILENCE)])).toEqual([320, ...times(30, 320), 1600]);
  });

  it('keeps the quiet just after speech in pairs (the vendor ends the utterance on it), then 100 ms', () => {
    const sizes = run(false, [...times(2, SPEECH), ...times(70, QUIET)]);
    // 60 frames of quiet after speech in 30 pairs (with the speech pair first), then two 100 ms.
    expect(sizes).toEqual([320, ...times(30, 320), 800, 800]);
  });

  it('with edges at once, sends the onset and the end of speech frame by frame, the middle in 100 ms', () => {
    const sizes = run(true, [...times(12, QUIET), ...times(27, SPEECH), ...times(66, QUIET)]);
    // 12 quiet: two 100 ms messages, two frames waiting, sent with the first speech frame; the rest
    // of the first 15 of speech at once, the next 12 in 100 ms (two wait, and go with the first
    // quiet frame), the rest of 60 quiet at once, then 100 ms.
    expect(sizes).toEqual([800, 800, 480, ...times(14, 160), 800, 800, 480, ...times(59, 160), 800]);
  });

  it('ends the quiet edge when the vendor says the utterance ended, and takes the next speech as an onset', () => {
    const sizes: number[] = [];
    const messages = new CallerAudioMessages((mulaw) => sizes.push(mulaw.length), true);
    for (const f of [...times(20, SPEECH), ...times(25, QUIET)]) messages.push(f);
    sizes.length = 0;
    messages.vendorEndedSpeech();
    // The quiet goes in 100 ms from here; speech 3 frames after the end is an onset, frame by frame.
    for (const f of [...times(12, QUIET), ...times(3, SPEECH)]) messages.push(f);
    expect(sizes).toEqual([800, 800, 480, 160, 160]);
    // Told during speech (a late event), it changes nothing.
    const during: number[] = [];
    const speaking = new CallerAudioMessages((mulaw) => during.push(mulaw.length), true);
    for (const f of times(16, SPEECH)) speaking.push(f);
    speaking.vendorEndedSpeech();
    for (const f of [...times(4, SPEECH), QUIET, QUIET]) speaking.push(f);
    expect(during).toEqual([...times(15, 160), 800, 160, 160]);
    // Told in a pause shorter than an onset's (a late event), it changes nothing either.
    const paused: number[] = [];
    const pausing = new CallerAudioMessages((mulaw) => paused.push(mulaw.length), true);
    for (const f of [...times(20, SPEECH), ...times(5, QUIET)]) pausing.push(f);
    paused.length = 0;
    pausing.vendorEndedSpeech();
    for (const f of times(5, QUIET)) pausing.push(f);
    expect(paused).toEqual(times(5, 160));
  });

  it('sends what waits on drain, and nothing twice', () => {
    const sizes: number[] = [];
    const messages = new CallerAudioMessages((mulaw) => sizes.push(mulaw.length), false);
    for (const f of times(3, QUIET)) messages.push(f);
    expect(messages.waitingBytes).toBe(480);
    messages.drain();
    messages.drain();
    expect(sizes).toEqual([480]);
    expect(messages.waitingBytes).toBe(0);
  });

  it('copies what waits: the caller may reuse the frame it lent', () => {
    const received: Uint8Array[] = [];
    const messages = new CallerAudioMessages((mulaw) => received.push(mulaw.slice()), false);
    const lent = new Uint8Array(160).fill(0xff);
    messages.push(lent);
    lent.fill(0x7f);
    messages.drain();
    expect(received[0]!.every((b) => b === 0xff)).toBe(true);
  });

  it('keeps no view on a Buffer it was lent, and each message has its frames in order', () => {
    const received: number[][] = [];
    const messages = new CallerAudioMessages((mulaw) => received.push([...mulaw]), false);
    // Quiet frames from one Buffer, as the carrier's come from Node's shared pool: each a view.
    const pool = Buffer.alloc(160 * 12);
    for (let i = 0; i < 12; i++) pool.fill(0xf0 + i, i * 160, (i + 1) * 160);
    for (let i = 0; i < 12; i++) messages.push(pool.subarray(i * 160, (i + 1) * 160));
    pool.fill(0);
    messages.drain();
    const frames = received.flatMap((message) =>
      Array.from({ length: message.length / 160 }, (_, f) => message[f * 160]),
    );
    expect(received.map((message) => message.length)).toEqual([800, 800, 320]);
    expect(frames).toEqual(Array.from({ length: 12 }, (_, i) => 0xf0 + i));
  });

  it('takes a frame longer than a message whole', () => {
    const received: number[] = [];
    const messages = new CallerAudioMessages((mulaw) => received.push(mulaw.length), false);
    messages.push(new Uint8Array(160).fill(0xff));
    messages.push(new Uint8Array(2000).fill(0xff));
    expect(received).toEqual([2160]);
  });
});
