import type { CallSummary } from '../src/pipeline/call-metrics.js';
import { readMulawFile } from '../src/tools/simulator/clip-file.js';
import type { CallReport } from '../src/tools/simulator/call-report.js';
import { runPhoneCall } from '../src/tools/simulator/phone-call.js';
import type { Scenario } from '../src/tools/simulator/scenario.js';
import { LATENCY_SCENARIO } from './latency.js';

/**
 * The barge-in phase, run once per interruption mode (`instant`, the default, and `confirmed`,
 * the behaviour before it) on the same server: real speech over the answer (onset → `clear`, from
 * the simulator), and sounds that are not speech over the answer (from the server's `call ended`
 * lines: false stops the bot resumed from, with how long it was silent, and replies cut off, each
 * of which lost the words the caller had not heard). The emulated STT decides speech by energy, so
 * it transcribes clatter and makes a turn of it, which cuts the reply in either mode: the cuts that
 * stopping on suspicion adds are those of `instant` beyond those of `confirmed`.
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
  /** Stops of the bot during those sounds that it resumed from (suspected speech, not confirmed). */
  falseStops: number;
  /** Per resumed stop: the bot's silence, pause (`clear`) to playing on (server). */
  resumeMs: number[];
  /** Replies cancelled during those sounds: the rest of each was lost. */
  cutReplies: number;
  /** False stops and cut replies per sound (NOISE_CLIPS' names), calls matched by their call SID. */
  byClip: Record<string, { calls: number; falseStops: number; cutReplies: number }>;
  failedCalls: number;
}

/** Runs `jobs`, `concurrency` at a time. */
async function runAll(jobs: Array<() => Promise<CallReport>>, concurrency: number): Promise<CallReport[]> {
  const reports: CallReport[] = [];
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < jobs.length) reports.push(await jobs[next++]!());
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return reports;
}

export async function runBargeInPhase(options: {
  wssUrl: string;
  calls: number;
  concurrency: number;
  fixturesDir: string;
  serverCalls: CallSummary[];
}): Promise<BargeInSamples> {
  const fixture = (file: string) => readMulawFile(`${options.fixturesDir}/${file}`);
  const question = { mulaw: await fixture('A06_birch_canoe.ulaw') };
  const interruption = { mulaw: await fixture('A07_go_forward.ulaw') };
  const speech = Array.from(
    { length: options.calls },
    () => () =>
      runPhoneCall({
        target: { wssUrl: options.wssUrl },
        scenario: LATENCY_SCENARIO,
        clips: { question, interruption },
      }),
  );
  const speechReports = await runAll(speech, options.concurrency);

  const noise: Array<() => Promise<CallReport>> = [];
  const clipOfCall = new Map<string, string>();
  let noiseMs = 0;
  for (const clip of NOISE_CLIPS) {
    const mulaw = (await fixture(clip.file)).slice(clip.fromMs * 8, (clip.fromMs + clip.ms) * 8);
    for (let i = 0; i < Math.max(1, Math.round(options.calls / 2)); i++) {
      noiseMs += mulaw.length / 8;
      noise.push(async () => {
        const report = await runPhoneCall({
          target: { wssUrl: options.wssUrl },
          scenario: noiseScenario,
          clips: { question, noise: { mulaw, voiced: null } },
        });
        clipOfCall.set(report.callSid, clip.name);
        return report;
      });
    }
  }
  const firstNoiseCall = options.serverCalls.length;
  const noiseReports = await runAll(noise, options.concurrency);
  // The server logs each call's end a moment after the caller hangs up.
  const deadline = Date.now() + 5000;
  while (options.serverCalls.length - firstNoiseCall < noise.length && Date.now() < deadline)
    await new Promise((resolve) => setTimeout(resolve, 50));

  const samples: BargeInSamples = {
    onsetToClearMs: [],
    noiseMinutes: noiseMs / 60_000,
    falseStops: 0,
    resumeMs: [],
    cutReplies: 0,
    byClip: {},
    failedCalls: 0,
  };
  for (const report of [...speechReports, ...noiseReports])
    if (report.outcome !== 'completed') samples.failedCalls += 1;
  for (const report of speechReports) {
    const over = report.metrics.utterances[1];
    if (over?.bargeInLatencyMs != null) samples.onsetToClearMs.push(over.bargeInLatencyMs);
  }
  for (const call of options.serverCalls.slice(firstNoiseCall)) {
    samples.falseStops += call.resumes;
    samples.cutReplies += call.bargeIns;
    samples.resumeMs.push(...call.pausedMs);
    const clip = clipOfCall.get((call as CallSummary & { callSid?: string }).callSid ?? '') ?? 'unmatched';
    samples.byClip[clip] ??= { calls: 0, falseStops: 0, cutReplies: 0 };
    samples.byClip[clip].calls += 1;
    samples.byClip[clip].falseStops += call.resumes;
    samples.byClip[clip].cutReplies += call.bargeIns;
  }
  return samples;
}
