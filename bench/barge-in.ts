import { readMulawFile } from '../src/simulator/clip-file.js';
import type { CallReport } from '../src/simulator/call-report.js';
import { runPhoneCall } from '../src/simulator/phone-call.js';
import type { Scenario } from '../src/simulator/scenario.js';
import { LATENCY_SCENARIO } from './latency.js';

/**
 * The barge-in phase, run once per interruption mode (`instant`, the default, and `confirmed`,
 * the behaviour before it) on the same server: real speech over the answer (onset → `clear`), and
 * sounds that are not speech over the answer (false stops, how soon the reply resumes, and replies
 * cut off, each of which loses the words the caller had not heard).
 */

/** A sound over the answer: `ms` of `file` from `fromMs`. */
interface NoiseClip {
  name: string;
  file: string;
  fromMs: number;
  ms: number;
}

/** The fixtures hold no cough: short cuts of speech stand in for one, beside real clatter. */
export const NOISE_CLIPS: readonly NoiseClip[] = [
  { name: 'dishes', file: 'A10_noise_dishes.ulaw', fromMs: 0, ms: 6000 },
  { name: 'syllable burst', file: 'A07_go_forward.ulaw', fromMs: 500, ms: 120 },
  { name: 'word-onset burst', file: 'A01_jfk.ulaw', fromMs: 300, ms: 150 },
];

const noiseScenario: Scenario = {
  steps: [
    { do: 'wait-bot-silence', ms: 600 },
    { do: 'play', clip: 'question' },
    { do: 'wait-bot-audio', thenMs: 700 },
    { do: 'play', clip: 'noise' },
    { do: 'wait-bot-silence', ms: 800 },
  ],
  waitTimeoutMs: 15_000,
};

export interface BargeInSamples {
  /** Real speech over the bot: the caller's voice onset to `clear` received. */
  onsetToClearMs: number[];
  /** Minutes of non-speech played over the bot's answers. */
  noiseMinutes: number;
  /** Clears during those sounds. */
  falseStops: number;
  /** Per false stop the bot recovered from: `clear` to its audio again. */
  resumeMs: number[];
  /** False stops after which the reply never resumed: the rest of it was lost. */
  cutReplies: number;
  failedCalls: number;
}

export async function runBargeInPhase(options: { wssUrl: string; calls: number; concurrency: number; fixturesDir: string }): Promise<BargeInSamples> {
  const fixture = (file: string) => readMulawFile(`${options.fixturesDir}/${file}`);
  const question = { mulaw: await fixture('A06_birch_canoe.ulaw') };
  const interruption = { mulaw: await fixture('A07_go_forward.ulaw') };
  const jobs: Array<() => Promise<CallReport>> = [];
  for (let i = 0; i < options.calls; i++) {
    jobs.push(() => runPhoneCall({ target: { wssUrl: options.wssUrl }, scenario: LATENCY_SCENARIO, clips: { question, interruption } }));
  }
  let noiseMs = 0;
  for (const clip of NOISE_CLIPS) {
    const mulaw = (await fixture(clip.file)).slice(clip.fromMs * 8, (clip.fromMs + clip.ms) * 8);
    for (let i = 0; i < Math.max(1, Math.round(options.calls / 2)); i++) {
      noiseMs += mulaw.length / 8;
      jobs.push(() => runPhoneCall({ target: { wssUrl: options.wssUrl }, scenario: noiseScenario, clips: { question, noise: { mulaw, voiced: null } } }));
    }
  }
  const reports: CallReport[] = [];
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < jobs.length) reports.push(await jobs[next++]!());
  };
  await Promise.all(Array.from({ length: options.concurrency }, worker));

  const samples: BargeInSamples = { onsetToClearMs: [], noiseMinutes: noiseMs / 60_000, falseStops: 0, resumeMs: [], cutReplies: 0, failedCalls: 0 };
  for (const report of reports) {
    if (report.outcome !== 'completed') samples.failedCalls += 1;
    const over = report.metrics.utterances[1];
    if (!over) continue;
    if (over.clip === 'interruption') {
      if (over.bargeInLatencyMs != null) samples.onsetToClearMs.push(over.bargeInLatencyMs);
      continue;
    }
    // Clears from the start of the sound to the end of the call: the caller said nothing else.
    for (const clear of report.metrics.clears.filter((c) => c.atMs >= over.startMs)) {
      samples.falseStops += 1;
      if (clear.resumedAfterMs === null) samples.cutReplies += 1;
      else samples.resumeMs.push(clear.resumedAfterMs);
    }
  }
  return samples;
}
