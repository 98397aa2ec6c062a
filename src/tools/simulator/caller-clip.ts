import { rmsDbfs } from '../../audio/energy.js';
import { FRAME_MS, MULAW_FRAME_BYTES, MULAW_SILENCE_BYTE } from '../../audio/frames.js';
import { decodeMulaw } from '../../audio/mulaw.js';

/** Where speech is in a clip, in ms from its start (start of first / end of last voiced frame). */
export interface VoicedSpan {
  startMs: number;
  endMs: number;
}

/** Audio the simulated caller can play. */
export interface CallerClip {
  /** 8 kHz mono mu-law, no header. */
  mulaw: Uint8Array;
  /** Where the speech is; null when there is none (noise). Omitted: found from frame energy. */
  voiced?: VoicedSpan | null;
}

/** A clip cut into what goes on the wire, computed once and shared by every call playing it. */
export interface PreparedClip {
  frameCount: number;
  /** Base64 payload of each 20 ms frame (the last one padded with mu-law silence). */
  payloads: string[];
  /** The same frames as bytes, frameCount * 160 long, for recordings. */
  frames: Uint8Array;
  /** Frame indexes of the first and last voiced frame; -1 when the clip has no speech. */
  firstVoicedFrame: number;
  lastVoicedFrame: number;
}

/**
 * Energy detection is deliberately crude: a frame is voiced when its RMS is within 35 dB of the
 * clip's loudest frame and above -40 dBFS, and only runs of 3+ frames (60 ms) count, so clicks
 * and breaths do not start an utterance. Give `voiced` explicitly when the numbers matter.
 */
const VOICED_FLOOR_DBFS = -40;
const VOICED_BELOW_PEAK_DB = 35;
const MIN_VOICED_RUN_FRAMES = 3;

/** Finds the voiced span of a mu-law clip by frame energy; null when no frame qualifies. */
export function findVoicedSpan(mulaw: Uint8Array): VoicedSpan | null {
  const frameCount = Math.ceil(mulaw.length / MULAW_FRAME_BYTES);
  if (frameCount === 0) return null;
  const pcm = decodeMulaw(mulaw);
  const levels = new Float64Array(frameCount);
  let peak = -Infinity;
  for (let f = 0; f < frameCount; f++) {
    const level = rmsDbfs(pcm.subarray(f * MULAW_FRAME_BYTES, (f + 1) * MULAW_FRAME_BYTES));
    levels[f] = level;
    if (level > peak) peak = level;
  }
  const threshold = Math.max(VOICED_FLOOR_DBFS, peak - VOICED_BELOW_PEAK_DB);
  let first = -1;
  let last = -1;
  let run = 0;
  for (let f = 0; f < frameCount; f++) {
    if (levels[f]! >= threshold) {
      run += 1;
      if (run >= MIN_VOICED_RUN_FRAMES) {
        if (first < 0) first = f - run + 1;
        last = f;
      }
    } else {
      run = 0;
    }
  }
  if (first < 0) return null;
  return { startMs: first * FRAME_MS, endMs: Math.min((last + 1) * FRAME_MS, (mulaw.length * 1000) / 8000) };
}

const prepared = new WeakMap<CallerClip, PreparedClip>();

/** Frames and voiced frames of a clip; cached per clip object, so reuse clip objects across calls. */
export function prepareClip(clip: CallerClip): PreparedClip {
  const cached = prepared.get(clip);
  if (cached) return cached;
  const frameCount = Math.ceil(clip.mulaw.length / MULAW_FRAME_BYTES);
  const frames = new Uint8Array(frameCount * MULAW_FRAME_BYTES).fill(MULAW_SILENCE_BYTE);
  frames.set(clip.mulaw);
  const payloads: string[] = new Array<string>(frameCount);
  const asBuffer = Buffer.from(frames.buffer, frames.byteOffset, frames.byteLength);
  for (let f = 0; f < frameCount; f++) {
    payloads[f] = asBuffer.toString('base64', f * MULAW_FRAME_BYTES, (f + 1) * MULAW_FRAME_BYTES);
  }
  const span = clip.voiced === undefined ? findVoicedSpan(clip.mulaw) : clip.voiced;
  let firstVoicedFrame = -1;
  let lastVoicedFrame = -1;
  if (span && frameCount > 0 && span.endMs > span.startMs) {
    firstVoicedFrame = Math.min(frameCount - 1, Math.max(0, Math.floor(span.startMs / FRAME_MS)));
    lastVoicedFrame = Math.min(frameCount - 1, Math.max(firstVoicedFrame, Math.ceil(span.endMs / FRAME_MS) - 1));
  }
  const result: PreparedClip = { frameCount, payloads, frames, firstVoicedFrame, lastVoicedFrame };
  prepared.set(clip, result);
  return result;
}
