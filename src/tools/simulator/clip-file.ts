import { readFile } from 'node:fs/promises';
import { extname, resolve } from 'node:path';
import { TELEPHONY_SAMPLE_RATE_HZ } from '../../audio/frames.js';
import { wavToMulaw } from '../../audio/wav.js';
import type { CallerClip } from './caller-clip.js';
import type { ClipSource, Scenario } from './scenario.js';

/** mu-law is one byte per sample, so ms and bytes convert at 8 per ms. */
const MULAW_BYTES_PER_MS = TELEPHONY_SAMPLE_RATE_HZ / 1000;

/** Reads a .wav (decoded, resampled) or .ulaw/.raw/other (taken as raw 8 kHz mu-law) file. */
export async function readMulawFile(path: string): Promise<Uint8Array> {
  const bytes = new Uint8Array(await readFile(path));
  return extname(path).toLowerCase() === '.wav' ? wavToMulaw(bytes) : bytes;
}

/** Cuts [startMs, startMs + durationMs) out of 8 kHz mu-law audio (a view, no copy). */
export function sliceMulaw(mulaw: Uint8Array, startMs = 0, durationMs?: number): Uint8Array {
  const start = Math.min(mulaw.length, Math.round(startMs * MULAW_BYTES_PER_MS));
  const end =
    durationMs === undefined
      ? mulaw.length
      : Math.min(mulaw.length, start + Math.round(durationMs * MULAW_BYTES_PER_MS));
  return mulaw.subarray(start, end);
}

/** Loads one clip; relative paths resolve against `baseDir` (a scenario file's folder). */
export async function loadCallerClip(source: ClipSource, baseDir = process.cwd()): Promise<CallerClip> {
  const whole = await readMulawFile(resolve(baseDir, source.file));
  const mulaw = sliceMulaw(whole, source.startMs, source.durationMs);
  return source.voiced === undefined ? { mulaw } : { mulaw, voiced: source.voiced };
}

/** Loads every clip a scenario names in `clips`. */
export async function loadScenarioClips(
  scenario: Scenario,
  baseDir = process.cwd(),
): Promise<Record<string, CallerClip>> {
  const clips: Record<string, CallerClip> = {};
  for (const [name, source] of Object.entries(scenario.clips ?? {}))
    clips[name] = await loadCallerClip(source, baseDir);
  return clips;
}
