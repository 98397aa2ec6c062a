import { describe, expect, it } from 'vitest';
import { DtmfDetector, dtmfToneMulaw } from './dtmf-tones.js';
import { linearToMulawByte } from './mulaw.js';

function tone(hz: number, ms: number): Uint8Array {
  const out = new Uint8Array(ms * 8);
  for (let i = 0; i < out.length; i++)
    out[i] = linearToMulawByte(Math.round(8000 * Math.sin((2 * Math.PI * hz * i) / 8000)));
  return out;
}

describe('in-band DTMF', () => {
  it('every key it plays is heard back once, in order, pauses included', () => {
    const audio = dtmfToneMulaw('123w456789*0#ABCD');
    // 16 keys of 200 ms and one 500 ms wait.
    expect(audio.length).toBe((16 * 200 + 500) * 8);
    const detector = new DtmfDetector();
    const heard: string[] = [];
    // In the odd-sized chunks a network delivers.
    for (let at = 0; at < audio.length; at += 333) heard.push(...detector.push(audio.subarray(at, at + 333)));
    expect(heard.join('')).toBe('123456789*0#ABCD');
  });

  it('a key held twice is two presses only with silence between; a lone tone or silence is no key', () => {
    const detector = new DtmfDetector();
    expect(detector.push(dtmfToneMulaw('55'))).toEqual(['5', '5']);
    expect(detector.push(tone(440, 500))).toEqual([]);
    expect(detector.push(tone(697, 500))).toEqual([]);
    expect(detector.push(new Uint8Array(4000).fill(0xff))).toEqual([]);
  });

  it('refuses characters that are not keys', () => {
    expect(() => dtmfToneMulaw('12x')).toThrow(/not a DTMF key/);
  });
});
