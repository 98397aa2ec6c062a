import { encodeMulaw } from '../audio/mulaw.js';

const SAMPLE_RATE_HZ = 8000;

/**
 * What a caller hears while the customer's server starts a bot: a soft two-note chime every two
 * seconds, generated (no file to ship or fetch), as 8 kHz mu-law to loop.
 */
export function holdChime(): Uint8Array {
  const periodSamples = 2 * SAMPLE_RATE_HZ;
  const pcm = new Int16Array(periodSamples);
  const notes: Array<{ startMs: number; hz: number }> = [
    { startMs: 0, hz: 659.25 },
    { startMs: 250, hz: 523.25 },
  ];
  for (const { startMs, hz } of notes) {
    const start = (startMs * SAMPLE_RATE_HZ) / 1000;
    const length = 0.6 * SAMPLE_RATE_HZ;
    for (let i = 0; i < length; i++) {
      // A bell-like decay keeps it gentle; the level stays well below speech.
      const envelope = Math.exp((-4 * i) / length) * Math.min(1, i / 80);
      pcm[start + i]! += Math.round(2500 * envelope * Math.sin((2 * Math.PI * hz * i) / SAMPLE_RATE_HZ));
    }
  }
  return encodeMulaw(pcm);
}
