/**
 * Signal level of a PCM frame, for the VAD's `min_volume` gate and for diagnostics.
 *
 * Two scales exist because a linear RMS in 0..1 is the wrong scale for the gate: telephone speech
 * sits around -20..-35 dBFS, i.e. a linear RMS of only 0.02..0.1, so a threshold of 0.6 would never
 * pass. `loudnessVolume` reproduces the scale Pipecat's `min_volume` (default 0.6) is defined on.
 */

const INT16_FULL_SCALE = 32768;

/**
 * Pipecat measures volume as ITU BS.1770 loudness of the raw int16 values (not scaled to -1..1,
 * so full scale adds 20*log10(32768) = 90.3 dB) and maps -20..80 onto 0..1.
 */
const LOUDNESS_FLOOR_DB = -20;
const LOUDNESS_RANGE_DB = 100;
/** The constant offset in the BS.1770 loudness formula: L = -0.691 + 10*log10(mean square). */
const BS1770_OFFSET_DB = -0.691;

function meanSquare(samples: Int16Array): number {
  const n = samples.length;
  if (n === 0) return 0;
  let sumSquares = 0;
  for (let i = 0; i < n; i++) {
    const s = samples[i]!;
    sumSquares += s * s;
  }
  return sumSquares / n;
}

/** Root mean square of the samples, in int16 units (0..32768). 0 for an empty frame. */
export function rms(samples: Int16Array): number {
  return Math.sqrt(meanSquare(samples));
}

/** RMS normalised to 0..1 of int16 full scale (a full-scale square wave gives 1). */
export function rmsLevel(samples: Int16Array): number {
  return Math.min(1, rms(samples) / INT16_FULL_SCALE);
}

/** RMS in dB relative to int16 full scale; -Infinity for digital silence. */
export function rmsDbfs(samples: Int16Array): number {
  const value = rms(samples);
  return value === 0 ? -Infinity : 20 * Math.log10(value / INT16_FULL_SCALE);
}

/**
 * Volume in 0..1 on Pipecat's `min_volume` scale: 10*log10(mean square of int16 values) - 0.691,
 * mapped linearly from [-20, 80] dB to [0, 1] and clamped.
 *
 * Differences from Pipecat, on purpose: it skips BS.1770's K-weighting filter (a +4 dB shelf
 * above ~1.5 kHz and a high-pass at ~38 Hz). On 300-3400 Hz telephone speech that filter moves
 * the result by about 1-2 dB, i.e. 0.01-0.02 on this scale, and leaving it out keeps this a
 * single pass with no filter state on the per-window path.
 *
 * Reference points: 0.6 (the default gate) is about -50 dBFS RMS; speech at -26 dBFS RMS is about 0.84;
 * digital silence is 0.
 */
export function loudnessVolume(samples: Int16Array): number {
  const power = meanSquare(samples);
  if (power === 0) return 0;
  const loudnessDb = BS1770_OFFSET_DB + 10 * Math.log10(power);
  const normalised = (loudnessDb - LOUDNESS_FLOOR_DB) / LOUDNESS_RANGE_DB;
  return normalised < 0 ? 0 : Math.min(normalised, 1);
}
