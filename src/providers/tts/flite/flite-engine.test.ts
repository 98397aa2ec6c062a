import { describe, expect, it } from 'vitest';
import { rms } from '../../../audio/energy.js';
import { resample } from '../../../audio/resample.js';
import { synthesizeFlite } from './flite-engine.js';
import { FLITE_VOICES, fliteVoiceSampleRateHz, UnknownFliteVoiceError } from './flite-voices.js';

const SENTENCE = 'Thank you for calling. How can I help you today?';
const durationSecs = (audio: { samples: Int16Array; sampleRateHz: number }) =>
  audio.samples.length / audio.sampleRateHz;

/**
 * Share of energy above 4.5 kHz, from Hann-windowed DFTs of consecutive 512-sample blocks.
 * Audio that was really produced at 8 kHz and only labelled 16 kHz would have essentially none.
 */
function shareAbove4500Hz(samples: Int16Array, sampleRateHz: number): number {
  const n = 512;
  const window = Float64Array.from({ length: n }, (_, i) => 0.5 - 0.5 * Math.cos((2 * Math.PI * i) / n));
  const cos = Float64Array.from({ length: n }, (_, i) => Math.cos((2 * Math.PI * i) / n));
  const sin = Float64Array.from({ length: n }, (_, i) => Math.sin((2 * Math.PI * i) / n));
  const block = new Float64Array(n);
  let high = 0;
  let total = 0;
  for (let start = 0; start + n <= samples.length; start += n) {
    for (let i = 0; i < n; i++) block[i] = samples[start + i]! * window[i]!;
    for (let k = 1; k < n / 2; k++) {
      let re = 0;
      let im = 0;
      for (let i = 0; i < n; i++) {
        const at = (k * i) % n;
        re += block[i]! * cos[at]!;
        im -= block[i]! * sin[at]!;
      }
      const power = re * re + im * im;
      total += power;
      if ((k * sampleRateHz) / n > 4500) high += power;
    }
  }
  return high / total;
}

describe('synthesizeFlite', () => {
  it('speaks a sentence with the default voice (kal) at 8 kHz', async () => {
    const audio = await synthesizeFlite(SENTENCE);
    expect(audio.sampleRateHz).toBe(8000);
    // 10 words: between 1.5 and 6 seconds of speech at any sane speaking rate.
    expect(durationSecs(audio)).toBeGreaterThan(1.5);
    expect(durationSecs(audio)).toBeLessThan(6);
    expect(rms(audio.samples)).toBeGreaterThan(500);
  });

  it.each(FLITE_VOICES.map((v) => [v.name, v.sampleRateHz] as const))(
    'voice %s returns %i Hz audio of plausible duration',
    async (voice, sampleRateHz) => {
      const audio = await synthesizeFlite(SENTENCE, { voice });
      expect(audio.sampleRateHz).toBe(sampleRateHz);
      expect(fliteVoiceSampleRateHz(voice)).toBe(sampleRateHz);
      // Interpreted at the claimed rate the sentence must last like speech, not 2x too long/short.
      expect(durationSecs(audio)).toBeGreaterThan(1.5);
      expect(durationSecs(audio)).toBeLessThan(6);
    },
  );

  it('16 kHz voices really carry content above 4 kHz (the rate is not just a label)', async () => {
    for (const voice of ['slt', 'kal16']) {
      const wide = await synthesizeFlite(SENTENCE, { voice });
      expect(shareAbove4500Hz(wide.samples, wide.sampleRateHz)).toBeGreaterThan(1e-5);
    }
    // Control: 8 kHz speech upsampled to 16 kHz has (almost) nothing up there.
    const narrow = await synthesizeFlite(SENTENCE, { voice: 'kal' });
    expect(shareAbove4500Hz(resample(narrow.samples, 8000, 16000), 16000)).toBeLessThan(1e-6);
  });

  it('makes duration roughly proportional to the amount of text', async () => {
    const short = await synthesizeFlite('Please hold the line.');
    const long = await synthesizeFlite(
      'Please hold the line. Please hold the line. Please hold the line. Please hold the line.',
    );
    const ratio = durationSecs(long) / durationSecs(short);
    expect(ratio).toBeGreaterThan(3);
    expect(ratio).toBeLessThan(5);
  });

  it('rejects an unknown voice clearly instead of falling back to the default', async () => {
    await expect(synthesizeFlite(SENTENCE, { voice: 'bogus' })).rejects.toBeInstanceOf(UnknownFliteVoiceError);
    await expect(synthesizeFlite(SENTENCE, { voice: 'bogus' })).rejects.toThrow(
      'unknown Flite voice "bogus"; available voices: kal, kal16, awb, rms, slt',
    );
    // A path would make flite try to load a voice file; the limited-domain clock voice is excluded.
    await expect(synthesizeFlite(SENTENCE, { voice: '/etc/passwd' })).rejects.toThrow(/unknown Flite voice/);
    await expect(synthesizeFlite(SENTENCE, { voice: 'awb_time' })).rejects.toThrow(/unknown Flite voice/);
    expect(() => fliteVoiceSampleRateHz('bogus')).toThrow(UnknownFliteVoiceError);
  });

  it('returns empty audio for empty or blank text', async () => {
    const audio = await synthesizeFlite('  \n ', { voice: 'slt' });
    expect(audio).toEqual({ sampleRateHz: 16000, samples: new Int16Array(0) });
  });

  it('speaks text that looks like a command-line option instead of parsing it', async () => {
    const audio = await synthesizeFlite('-voice slt -o /etc/passwd');
    expect(audio.sampleRateHz).toBe(8000);
    expect(durationSecs(audio)).toBeGreaterThan(1);
  });

  it('honours an abort signal', async () => {
    const controller = new AbortController();
    controller.abort();
    await expect(synthesizeFlite(SENTENCE, { signal: controller.signal })).rejects.toMatchObject({
      name: 'AbortError',
    });

    const late = new AbortController();
    const pending = synthesizeFlite(SENTENCE, { signal: late.signal });
    late.abort(new Error('caller hung up'));
    await expect(pending).rejects.toThrow('caller hung up');
  });

  it('runs concurrent syntheses without mixing their outputs', async () => {
    const texts = ['One.', 'Two two two two two.', 'Three, three, three.', SENTENCE];
    const sequential: Array<Awaited<ReturnType<typeof synthesizeFlite>>> = [];
    for (const text of texts) sequential.push(await synthesizeFlite(text, { voice: 'kal16' }));
    const concurrent = await Promise.all(texts.map((text) => synthesizeFlite(text, { voice: 'kal16' })));
    concurrent.forEach((audio, i) => {
      expect(audio.samples.length).toBe(sequential[i]!.samples.length);
      expect(Buffer.from(audio.samples.buffer).equals(Buffer.from(sequential[i]!.samples.buffer))).toBe(true);
    });
  });
});
