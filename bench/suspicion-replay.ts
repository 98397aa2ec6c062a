import { readFileSync, readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { MULAW_SILENCE_BYTE } from '../src/audio/frames.js';
import { encodeMulaw } from '../src/audio/mulaw.js';
import { findVoicedSpan } from '../src/tools/simulator/caller-clip.js';
import { getSileroSession, releaseSileroSession } from '../src/vad/silero-model.js';
import { VadStream } from '../src/vad/vad-stream.js';
import { percentile } from './report.js';
import { DECIDED_WITHIN_AUDIO_MS } from './suspicion-timing.js';

/**
 * The instant pause's decision in audio time, with no server and no clock: each clip of a speech
 * set replayed through the call's VAD (real Silero, default settings) where a caller interrupts,
 * at every phase of the 32 ms window grid against the caller's 20 ms frames:
 * - over the greeting: the call's first sound, after a second of the caller's silence;
 * - over an answer: after a question (fixtures' A06) and the silence of listening to the answer.
 * Prints how much of the caller's speech the suspicion needed (from the clip's first voiced
 * frame, as the simulator finds it), and for each late one the model's first windows.
 *
 * Tune on `fixtures/tuning-speech` (the default) or `fixtures/audio`; `--set
 * bench/held-apart-speech` only checks (never tune on it: see its README).
 *   npx tsx bench/suspicion-replay.ts [--set DIR] [--prefix int] [--phases 8] [--verbose]
 */

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const QUESTION = `${ROOT}fixtures/audio/A06_birch_canoe.ulaw`;
const FRAME_BYTES = 160;

interface Situation {
  name: string;
  /** Audio before the clip (whole 20 ms frames). */
  before: (phaseFrames: number) => Uint8Array;
}

/**
 * What the caller's line carries between words: digital silence, or with `--quiet-dbfs` steady
 * noise at that RMS level (a seeded generator: the same noise every run), as real lines do.
 */
let quietDbfs: number | undefined;
const silence = (ms: number) => {
  const out = new Uint8Array(ms * 8).fill(MULAW_SILENCE_BYTE);
  if (quietDbfs === undefined) return out;
  const rms = 32768 * 10 ** (quietDbfs / 20);
  let seed = 0x2545f491;
  const random = () => {
    seed = (seed * 1103515245 + 12345) >>> 0;
    return seed / 2 ** 32;
  };
  // Uniform noise of this RMS: amplitude sqrt(3) times it.
  const pcm = Int16Array.from({ length: out.length }, () => Math.round((random() * 2 - 1) * rms * Math.sqrt(3)));
  return encodeMulaw(pcm);
};
const frames = (audio: Uint8Array) => {
  const padded = new Uint8Array(Math.ceil(audio.length / FRAME_BYTES) * FRAME_BYTES).fill(MULAW_SILENCE_BYTE);
  padded.set(audio);
  return padded;
};

const SITUATIONS: Situation[] = [
  { name: 'over the greeting', before: (phase) => silence(1000 + 20 * phase) },
  {
    name: 'over an answer',
    before: (phase) => {
      const question = frames(new Uint8Array(readFileSync(QUESTION)));
      const out = new Uint8Array(question.length + (2200 + 20 * phase) * 8);
      out.set(question);
      out.set(silence(2200 + 20 * phase), question.length);
      return out;
    },
  },
];

interface Replay {
  /** First suspicion (or speech-start with none before it) after the clip's voiced onset, ms; null: never. */
  delayMs: number | null;
  firstDecision: string;
  /** From the clip's start: the windows' probability / volume, for the log. */
  windows: Array<{ atMs: number; p: number; v: number; ran: boolean }>;
  refused: string[];
}

async function replay(before: Uint8Array, clip: Uint8Array): Promise<Replay> {
  const onsetMs = findVoicedSpan(clip)!.startMs;
  const clipAtMs = before.length / 8;
  const audio = new Uint8Array(before.length + clip.length + 8000);
  audio.set(before);
  audio.set(clip, before.length);
  audio.set(silence(1000), before.length + clip.length);
  const result: Replay = { delayMs: null, firstDecision: 'never', windows: [], refused: [] };
  const decide = (what: string, atMs: number) => {
    if (atMs <= clipAtMs || result.firstDecision !== 'never') return;
    result.firstDecision = what;
    result.delayMs = atMs - (clipAtMs + onsetMs);
  };
  const stream = new VadStream(
    {},
    {
      onSpeechSuspected: (atMs) => decide('suspected', atMs),
      onSpeechStart: (event) => decide('speech-start', event.atMs),
      onSuspicionDecision: (d) => {
        if (d.decision === 'refused' && d.atMs > clipAtMs && result.firstDecision === 'never')
          result.refused.push(`${d.atMs - clipAtMs}:${d.reason}`);
      },
      onWindow: (w) => {
        if (w.windowEndMs > clipAtMs && w.windowEndMs <= clipAtMs + onsetMs + 400)
          result.windows.push({
            atMs: Math.round(w.windowEndMs - clipAtMs),
            p: Math.round(w.probability * 100) / 100,
            v: Math.round(w.volume * 100) / 100,
            ran: w.ran,
          });
      },
    },
    { session: getSileroSession() },
  );
  for (let at = 0; at + FRAME_BYTES <= audio.length; at += FRAME_BYTES)
    await stream.pushMulaw(audio.subarray(at, at + FRAME_BYTES));
  stream.dispose();
  return result;
}

async function main(): Promise<void> {
  const { values: args } = parseArgs({
    options: {
      set: { type: 'string', default: 'fixtures/tuning-speech' },
      prefix: { type: 'string', default: '' },
      phases: { type: 'string', default: '8' },
      verbose: { type: 'boolean', default: false },
      'quiet-dbfs': { type: 'string' },
    },
  });
  if (args['quiet-dbfs'] !== undefined) quietDbfs = Number(args['quiet-dbfs']);
  const dir = `${ROOT}${args.set}`;
  const files = readdirSync(dir)
    .filter((f) => f.endsWith('.ulaw') && f.startsWith(args.prefix))
    .sort();
  for (const situation of SITUATIONS) {
    const delays: number[] = [];
    let inTime = 0;
    let total = 0;
    const late: string[] = [];
    for (const file of files) {
      const clip = new Uint8Array(readFileSync(`${dir}/${file}`));
      if (!findVoicedSpan(clip)) continue;
      for (let phase = 0; phase < Number(args.phases); phase++) {
        const r = await replay(situation.before(phase), clip);
        total += 1;
        if (r.delayMs !== null) delays.push(r.delayMs);
        if (r.firstDecision === 'suspected' && r.delayMs !== null && r.delayMs <= DECIDED_WITHIN_AUDIO_MS) {
          inTime += 1;
          continue;
        }
        const windows = r.windows.map((w) => `${w.atMs}:${w.p}/${w.v}${w.ran ? '' : '(skipped)'}`).join(' ');
        late.push(
          `  ${file} phase ${phase}: ${r.firstDecision} after ${r.delayMs} ms` +
            `${r.refused.length ? `; refused ${r.refused.join(', ')}` : ''}${args.verbose ? `\n    ${windows}` : ''}`,
        );
      }
    }
    process.stdout.write(
      `${situation.name}: suspected within ${DECIDED_WITHIN_AUDIO_MS} ms of the voiced onset ${inTime} of ${total} ` +
        `(${Math.round((1000 * inTime) / total) / 10} %); delay p50 ${percentile(delays, 50)} ms, p95 ${percentile(delays, 95)} ms\n`,
    );
    for (const line of late) process.stdout.write(`${line}\n`);
  }
  await releaseSileroSession();
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exitCode = 1;
});
