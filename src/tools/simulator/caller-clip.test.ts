import { describe, expect, it } from 'vitest';
import { MULAW_SILENCE_BYTE } from '../../audio/frames.js';
import { encodeMulaw } from '../../audio/mulaw.js';
import { findVoicedSpan, prepareClip } from './caller-clip.js';
import { readMulawFile, sliceMulaw } from './clip-file.js';

const FIXTURES = new URL('../../../fixtures/audio/', import.meta.url);

function tone(ms: number, amplitude = 8000): Int16Array {
  const pcm = new Int16Array(ms * 8);
  for (let i = 0; i < pcm.length; i++) pcm[i] = Math.round(amplitude * Math.sin((2 * Math.PI * 440 * i) / 8000));
  return pcm;
}

describe('caller clips', () => {
  it('finds speech in the JFK clip and none in digital silence', async () => {
    const jfk = await readMulawFile(new URL('A01_jfk.ulaw', FIXTURES).pathname);
    const span = findVoicedSpan(jfk)!;
    expect(span.startMs).toBeGreaterThan(100);
    expect(span.startMs).toBeLessThan(800);
    expect(span.endMs).toBeGreaterThan(10_000);
    expect(findVoicedSpan(new Uint8Array(1600).fill(MULAW_SILENCE_BYTE))).toBeNull();
  });

  it('.wav and .ulaw fixtures give the same 8 kHz mu-law length', async () => {
    const fromWav = await readMulawFile(new URL('A07_go_forward.8k.wav', FIXTURES).pathname);
    const raw = await readMulawFile(new URL('A07_go_forward.ulaw', FIXTURES).pathname);
    expect(Math.abs(fromWav.length - raw.length)).toBeLessThanOrEqual(1);
    expect(sliceMulaw(raw, 500, 1000).length).toBe(8000);
  });

  it('cuts a clip into padded 20 ms frames with voiced frame indexes, cached per clip', () => {
    const pcm = new Int16Array(8 * 500); // 100 ms silence, 300 ms tone, 100 ms silence
    pcm.set(tone(300), 800);
    const clip = { mulaw: encodeMulaw(pcm).subarray(0, 8 * 490) };
    const prepared = prepareClip(clip);
    expect(prepared.frameCount).toBe(25);
    expect(prepared.frames.length).toBe(25 * 160);
    expect(prepared.frames[prepared.frames.length - 1]).toBe(MULAW_SILENCE_BYTE);
    expect(Buffer.from(prepared.payloads[24]!, 'base64').length).toBe(160);
    expect(prepared.firstVoicedFrame).toBe(5);
    expect(prepared.lastVoicedFrame).toBe(19);
    expect(prepareClip(clip)).toBe(prepared);
    expect(prepareClip({ mulaw: clip.mulaw, voiced: null }).firstVoicedFrame).toBe(-1);
    expect(prepareClip({ mulaw: clip.mulaw, voiced: { startMs: 40, endMs: 61 } })).toMatchObject({
      firstVoicedFrame: 2,
      lastVoicedFrame: 3,
    });
  });
});
