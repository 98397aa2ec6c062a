import { readdirSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import type { CallSummary } from '../src/pipeline/call-metrics.js';
import { readMulawFile } from '../src/tools/simulator/clip-file.js';
import type { CallReport } from '../src/tools/simulator/call-report.js';
import { runPhoneCall } from '../src/tools/simulator/phone-call.js';
import type { Scenario } from '../src/tools/simulator/scenario.js';
import { runBargeInPhase } from './barge-in.js';
import { startEmulateProcess } from './capacity.js';
import { cpuPinning } from './cpu-pinning.js';
import { benchEmulatorArgs } from './latency.js';
import { type BudgetRow, formatTable, percentile } from './report.js';
import { createBotConfig, scrapeMetrics, startServerProcess } from './server-process.js';
import {
  DECIDED_WITHIN_AUDIO_MS,
  type InterruptionTiming,
  interruptionTiming,
  lateCause,
  p50p95,
  splitTimings,
} from './suspicion-timing.js';

/**
 * Turn-taking on speech the code was never tuned on: the held-apart set (bench/held-apart-speech,
 * synthetic voices at telephone levels and speeds; never used to tune anything). Run alone with
 * `npm run bench:turns`, and as a phase of `npm run bench`.
 *
 * - Reply latency (caller's last voiced frame to the first bot audio), for the first question and
 *   for what the caller says after interrupting the bot, each with and without pauses inside the
 *   utterance: the vendor's endpointing finalises the words said before a pause, so at the VAD's
 *   stop there may be nothing left for Finalize to answer.
 * - The instant pause's engagement: every interruption clip, over the greeting (the first reply)
 *   and over the answer to a question (a later reply); engaged when `clear` reached the caller
 *   within 120 ms of their voice onset, at default VAD settings.
 *   Each interruption is split (suspicion-timing.ts) into the code's decision, in audio time (how
 *   much of the caller's speech the suspicion needed, and what held it back), and the machine's
 *   delay (the server's frame-to-decision lag, the rest), with the event-loop lag of the server and
 *   of this process and the load average printed beside it.
 * - False stops on sounds that are not speech (the barge-in phase's noise calls), to set beside it.
 */

export const HELD_APART_DIR = fileURLToPath(new URL('./held-apart-speech', import.meta.url));
const FIXTURES = fileURLToPath(new URL('../fixtures/audio', import.meta.url));
/** The instant pause's goal: `clear` within this of the caller's voice onset. */
export const ENGAGED_WITHIN_MS = 120;
/** Node's event-loop histograms sample every this many ms and count the interval in each delay. */
const EVENT_LOOP_SAMPLING_MS = 10;
const round1 = (n: number) => Math.round(n * 10) / 10;

const greetingThenQuestion: Scenario = {
  steps: [
    { do: 'wait-bot-silence', ms: 600 },
    { do: 'play', clip: 'question' },
    { do: 'wait-bot-audio' },
    { do: 'wait-bot-silence', ms: 600 },
  ],
  waitTimeoutMs: 15_000,
};

/** Question, then the caller talks `thenMs` into the answer, then waits for the reply to that. */
const interruptAnswer = (thenMs: number): Scenario => ({
  steps: [
    { do: 'wait-bot-silence', ms: 600 },
    { do: 'play', clip: 'question' },
    { do: 'wait-bot-audio', thenMs },
    { do: 'play', clip: 'interruption' },
    { do: 'wait-bot-audio' },
    { do: 'wait-bot-silence', ms: 600 },
  ],
  waitTimeoutMs: 15_000,
});

/** The caller talks `thenMs` into the greeting, the call's first reply. */
const interruptGreeting = (thenMs: number): Scenario => ({
  steps: [
    { do: 'wait-bot-audio', thenMs },
    { do: 'play', clip: 'interruption' },
    { do: 'wait-bot-audio' },
    { do: 'wait-bot-silence', ms: 600 },
  ],
  waitTimeoutMs: 15_000,
});

export interface TurnTakingSamples {
  /** Reply latency, ms, per case (first question / after an interruption, with and without pauses). */
  replyLatencyMs: Record<string, number[]>;
  /** Onset → clear, ms, per interruption, by where it came (over the greeting, over an answer). */
  onsetToClearMs: Record<string, number[]>;
  /** Interruptions where the bot played over the caller and no clear came, by where. */
  noClear: Record<string, number>;
  /**
   * Interruptions the bot never played over, by where: it was between two sentences at the onset
   * and held the next one (no clear needed). Engaged: the caller heard no talk-over at all.
   */
  notTalkedOver: Record<string, number>;
  /** Pauses the server counted on those calls (instant pauses that engaged, however late). */
  serverPauses: number;
  /** Each interruption split into the code's decision (audio time) and the machine's delay. */
  interruptionTimings: InterruptionTiming[];
  /** While the interruptions ran: the machine's load and event-loop lag (ms; null when not measured). */
  machine: {
    loadAverage1m: [number, number] | null;
    serverLoopP99Ms: number | null;
    serverLoopMaxMs: number | null;
    benchLoopP99Ms: number | null;
    benchLoopMaxMs: number | null;
    /** The simulated callers' 20 ms clock woke up this late, p95 / max over calls. */
    callerClockLagP95Ms: number | null;
    callerClockLagMaxMs: number | null;
  };
  falseStops: number;
  noiseMinutes: number;
  cutReplies: number;
  /** False stops and cut replies per noise clip. */
  noiseByClip?: Record<string, { calls: number; falseStops: number; cutReplies: number }>;
  failedCalls: number;
}

async function runAll<T>(jobs: Array<() => Promise<T>>, concurrency: number): Promise<T[]> {
  const results: T[] = [];
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < jobs.length) results.push(await jobs[next++]!());
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return results;
}

export async function runTurnTakingPhase(options: {
  wssUrl: string;
  concurrency: number;
  /** Calls per reply-latency case. */
  latencyCalls: number;
  /** Noise calls per noise clip (false stops). */
  noiseCalls: number;
  /** Which parts to run (default all): `latency`, `engagement`, `noise`. */
  parts?: ReadonlySet<string>;
  /** The server's HTTP base URL, for its event-loop lag (/metrics); not measured without it. */
  baseUrl?: string;
  serverCalls: CallSummary[];
}): Promise<TurnTakingSamples> {
  const clip = async (name: string) => ({ mulaw: await readMulawFile(`${HELD_APART_DIR}/${name}.ulaw`) });
  const noPauses = await clip('no_pauses_question');
  const withPauses = await clip('pauses_question');
  const listShort = await clip('pauses_list_short');
  const listLong = await clip('pauses_list_long');
  const interruptions = await Promise.all(
    readdirSync(HELD_APART_DIR)
      .filter((f) => f.startsWith('int') && f.endsWith('.ulaw'))
      .sort()
      .map(async (f) => ({ name: f.slice(0, -'.ulaw'.length), ...(await clip(f.slice(0, -'.ulaw'.length))) })),
  );
  const call = (scenario: Scenario, clips: Record<string, { mulaw: Uint8Array }>) => () =>
    runPhoneCall({ target: { wssUrl: options.wssUrl }, scenario, clips });
  const samples: TurnTakingSamples = {
    replyLatencyMs: {},
    onsetToClearMs: { 'over the greeting': [], 'over an answer': [] },
    noClear: { 'over the greeting': 0, 'over an answer': 0 },
    notTalkedOver: { 'over the greeting': 0, 'over an answer': 0 },
    serverPauses: 0,
    interruptionTimings: [],
    machine: {
      loadAverage1m: null,
      serverLoopP99Ms: null,
      serverLoopMaxMs: null,
      benchLoopP99Ms: null,
      benchLoopMaxMs: null,
      callerClockLagP95Ms: null,
      callerClockLagMaxMs: null,
    },
    falseStops: 0,
    noiseMinutes: 0,
    cutReplies: 0,
    failedCalls: 0,
  };
  const count = (reports: CallReport[]) => {
    for (const report of reports) if (report.outcome !== 'completed') samples.failedCalls += 1;
  };

  const latencyCases: Array<[string, Scenario, Record<string, { mulaw: Uint8Array }>, number]> = [
    ['first question, no pauses', greetingThenQuestion, { question: noPauses }, 0],
    ['first question, with pauses', greetingThenQuestion, { question: withPauses }, 0],
    ['after an interruption, no pauses', interruptAnswer(700), { question: noPauses, interruption: noPauses }, 1],
    [
      'after an interruption, short list with pauses',
      interruptAnswer(700),
      { question: noPauses, interruption: listShort },
      1,
    ],
    [
      'after an interruption, long list with pauses',
      interruptAnswer(700),
      { question: noPauses, interruption: listLong },
      1,
    ],
  ];
  const runs = (part: string) => options.parts?.has(part) ?? true;
  for (const [name, scenario, clips, utterance] of runs('latency') ? latencyCases : []) {
    const reports = await runAll(
      Array.from({ length: options.latencyCalls }, () => call(scenario, clips)),
      options.concurrency,
    );
    count(reports);
    samples.replyLatencyMs[name] = reports.flatMap((r) => {
      const latency = r.metrics.utterances[utterance]?.replyLatencyMs;
      return latency == null ? [] : [latency];
    });
  }

  const firstEngagementCall = options.serverCalls.length;
  const engagementCases: Array<[string, Scenario, number]> = [
    ['over the greeting', interruptGreeting(600), 0],
    ['over an answer', interruptAnswer(700), 1],
  ];
  const engagementReports: Array<[string, CallReport, number, string]> = [];
  const loadBefore = loadavg()[0]!;
  // The scrape restarts the server's event-loop histogram: the next one covers the interruptions only.
  if (options.baseUrl && runs('engagement')) await scrapeMetrics(options.baseUrl);
  const benchLoop = monitorEventLoopDelay({ resolution: EVENT_LOOP_SAMPLING_MS });
  benchLoop.enable();
  for (const [where, scenario, utterance] of runs('engagement') ? engagementCases : []) {
    const named = await runAll(
      interruptions.map(
        (interruption) => async () =>
          [interruption.name, await call(scenario, { question: noPauses, interruption })()] as const,
      ),
      options.concurrency,
    );
    const reports = named.map(([, report]) => report);
    count(reports);
    for (const [name, report] of named) {
      engagementReports.push([where, report, utterance, name]);
      const said = report.metrics.utterances[utterance];
      if (said && !said.bargeIn) samples.notTalkedOver[where]! += 1;
      else if (said?.bargeInLatencyMs == null) samples.noClear[where]! += 1;
      else samples.onsetToClearMs[where]!.push(said.bargeInLatencyMs);
    }
  }
  benchLoop.disable();
  const engagementCalls = runs('engagement') ? interruptions.length * engagementCases.length : 0;
  const deadline = Date.now() + 5000;
  while (options.serverCalls.length - firstEngagementCall < engagementCalls && Date.now() < deadline)
    await new Promise((resolve) => setTimeout(resolve, 50));
  const bySid = new Map<string, CallSummary>();
  for (const summary of options.serverCalls.slice(firstEngagementCall)) {
    samples.serverPauses += summary.pauses;
    const sid = (summary as CallSummary & { callSid?: string }).callSid;
    if (sid) bySid.set(sid, summary);
  }
  if (engagementReports.length > 0) {
    samples.interruptionTimings = engagementReports.map(([where, report, utterance, name]) => ({
      ...interruptionTiming(where, report, utterance, bySid.get(report.callSid)),
      clip: name,
    }));
    const loopMs = (ns: number) => Math.round(Math.max(0, ns / 1e6 - EVENT_LOOP_SAMPLING_MS));
    const clockLags = engagementReports.map(([, report]) => Math.round(report.metrics.clockMaxLagMs));
    samples.machine = {
      loadAverage1m: [round1(loadBefore), round1(loadavg()[0]!)],
      serverLoopP99Ms: null,
      serverLoopMaxMs: null,
      benchLoopP99Ms: loopMs(benchLoop.percentile(99)),
      benchLoopMaxMs: loopMs(benchLoop.max),
      callerClockLagP95Ms: percentile(clockLags, 95),
      callerClockLagMaxMs: percentile(clockLags, 100),
    };
    if (options.baseUrl) {
      const after = await scrapeMetrics(options.baseUrl);
      const seconds = (name: string) => after.get(name);
      const p99 = seconds('nodejs_eventloop_lag_p99_seconds');
      const max = seconds('nodejs_eventloop_lag_max_seconds');
      samples.machine.serverLoopP99Ms = p99 === undefined ? null : loopMs(p99 * 1e9);
      samples.machine.serverLoopMaxMs = max === undefined ? null : loopMs(max * 1e9);
    }
  }

  if (!runs('noise')) return samples;
  const noise = await runBargeInPhase({
    wssUrl: options.wssUrl,
    calls: options.noiseCalls * 2,
    concurrency: options.concurrency,
    fixturesDir: FIXTURES,
    serverCalls: options.serverCalls,
  });
  samples.falseStops = noise.falseStops;
  samples.noiseMinutes = noise.noiseMinutes;
  samples.cutReplies = noise.cutReplies;
  samples.noiseByClip = noise.byClip;
  samples.failedCalls += noise.failedCalls;
  return samples;
}

export function turnTakingRows(s: TurnTakingSamples): BudgetRow[] {
  const rows: BudgetRow[] = [];
  for (const [name, values] of Object.entries(s.replyLatencyMs)) {
    rows.push({
      figure: `reply latency, ${name}, p50 (last voiced frame to first bot audio)`,
      unit: 'ms',
      measured: percentile(values, 50),
      budget: 'report',
      samples: values.length,
    });
  }
  for (const [where, values] of Object.entries(s.onsetToClearMs)) {
    const notTalkedOver = s.notTalkedOver?.[where] ?? 0;
    const interruptions = values.length + s.noClear[where]! + notTalkedOver;
    const engaged = values.filter((v) => v <= ENGAGED_WITHIN_MS).length + notTalkedOver;
    rows.push(
      {
        figure: `instant pause engaged (clear <= ${ENGAGED_WITHIN_MS} ms after onset), held-apart speech ${where}`,
        unit: '%',
        measured: interruptions > 0 ? (100 * engaged) / interruptions : null,
        budget: '>= 95',
        ok: (v) => v >= 95,
        samples: interruptions,
      },
      {
        figure: `onset to clear, held-apart speech ${where}, p50 / p95 (${notTalkedOver} never talked over, ${s.noClear[where]} not cleared)`,
        unit: 'ms',
        measured: percentile(values, 50),
        budget: `report (p95 ${percentile(values, 95) ?? 'n/a'} ms)`,
        samples: values.length,
      },
    );
  }
  for (const where of Object.keys(s.onsetToClearMs)) {
    const timings = (s.interruptionTimings ?? []).filter((t) => t.where === where);
    if (timings.length === 0) continue;
    const split = splitTimings(timings, ENGAGED_WITHIN_MS);
    rows.push(
      {
        figure: `  the code's decision in audio time: pause decided within ${DECIDED_WITHIN_AUDIO_MS} ms of the caller's speech, ${where}`,
        unit: '%',
        measured: (100 * split.decidedInTime) / split.interruptions,
        budget: '>= 95',
        ok: (v) => v >= 95,
        samples: split.interruptions,
      },
      {
        figure: `  caller speech heard when the pause was decided (audio), ${where}, p50 / p95`,
        unit: 'ms',
        measured: percentile(split.decisionAudioMs, 50),
        budget: `report (${p50p95(split.decisionAudioMs)})`,
        samples: split.decisionAudioMs.length,
      },
      {
        figure: `  machine: server, window's last frame in to the decision, ${where}, p50 / p95`,
        unit: 'ms',
        measured: percentile(split.serverLagMs, 50),
        budget: `report (${p50p95(split.serverLagMs)})`,
        samples: split.serverLagMs.length,
      },
      {
        figure: `  machine: the rest (caller pacing, sockets, bench loop), ${where}, p50 / p95`,
        unit: 'ms',
        measured: percentile(split.restMs, 50),
        budget: `report (${p50p95(split.restMs)})`,
        samples: split.restMs.length,
      },
    );
  }
  const noiseCalls = Object.values(s.noiseByClip ?? {}).reduce((n, clip) => n + clip.calls, 0);
  const m = s.machine;
  if (m?.loadAverage1m) {
    rows.push(
      {
        figure: 'machine during the interruptions: 1-minute load average, before / after',
        unit: '',
        measured: m.loadAverage1m[1],
        budget: `report (${m.loadAverage1m[0]} / ${m.loadAverage1m[1]})`,
        samples: 0,
      },
      {
        figure: 'machine: event-loop lag p99 / max, server',
        unit: 'ms',
        measured: m.serverLoopP99Ms,
        budget: `report (${m.serverLoopP99Ms ?? 'n/a'} / ${m.serverLoopMaxMs ?? 'n/a'})`,
        samples: 0,
      },
      {
        figure: 'machine: event-loop lag p99 / max, bench (the simulated callers)',
        unit: 'ms',
        measured: m.benchLoopP99Ms,
        budget: `report (${m.benchLoopP99Ms ?? 'n/a'} / ${m.benchLoopMaxMs ?? 'n/a'})`,
        samples: 0,
      },
      {
        figure: "machine: callers' 20 ms clock woke late, p95 / max over calls",
        unit: 'ms',
        measured: m.callerClockLagP95Ms,
        budget: `report (${m.callerClockLagP95Ms ?? 'n/a'} / ${m.callerClockLagMaxMs ?? 'n/a'})`,
        samples: 0,
      },
    );
  }
  rows.push(
    {
      figure: 'pauses the server counted on those interruption calls',
      unit: '',
      measured: s.serverPauses,
      budget: 'report',
      samples: Object.values(s.onsetToClearMs).reduce((n, v) => n + v.length, 0),
    },
    {
      figure: 'false stops per minute of non-speech over the bot (fixtures noise clips)',
      unit: '/min',
      measured: s.noiseMinutes > 0 ? Math.round((s.falseStops / s.noiseMinutes) * 10) / 10 : null,
      budget: 'report',
      samples: s.falseStops,
    },
    {
      // Per call too: runs with more noise calls cut more replies at the same rate.
      figure: `replies cut off during the non-speech, over ${noiseCalls} noise calls (${noiseCalls > 0 ? Math.round((100 * s.cutReplies) / noiseCalls) / 100 : 'n/a'} a call)`,
      unit: 'replies',
      measured: s.cutReplies,
      budget: 'report',
      samples: s.cutReplies,
    },
    ...Object.entries(s.noiseByClip ?? {}).map(([clip, n]) => ({
      figure: `  ${clip}: false stops / replies cut, over ${n.calls} calls`,
      unit: '',
      measured: n.cutReplies,
      budget: `report (${n.falseStops} / ${n.cutReplies})`,
      samples: n.calls,
    })),
    {
      figure: 'turn-taking phase: calls failed',
      unit: '',
      measured: s.failedCalls,
      budget: '0',
      ok: (v) => v === 0,
      samples: 0,
    },
  );
  return rows;
}

/** Why interruptions missed the 120 ms goal, per place: the code's decision or the machine. */
export function lateCauses(s: TurnTakingSamples): string {
  const lines: string[] = [];
  for (const where of Object.keys(s.onsetToClearMs)) {
    const timings = (s.interruptionTimings ?? []).filter((t) => t.where === where);
    if (timings.length === 0) continue;
    const clips = new Map<string, string[]>();
    for (const t of timings) {
      const cause = lateCause(t, ENGAGED_WITHIN_MS);
      if (cause) clips.set(cause, [...(clips.get(cause) ?? []), t.clip]);
    }
    lines.push(`clear later than ${ENGAGED_WITHIN_MS} ms ${where}: ${clips.size === 0 ? 'none' : ''}`);
    for (const [cause, names] of [...clips].sort((a, b) => b[1].length - a[1].length))
      lines.push(`  ${names.length} x ${cause}: ${names.join(', ')}`);
  }
  return lines.join('\n');
}

/** The bench's bot: default VAD settings and interruption mode (instant), a greeting. */
export function turnTakingBotConfig(): Record<string, unknown> {
  return {
    bot_profile: 'telephony_ws_voice_2024_09',
    services: { stt: 'deepgram', llm: 'openai', tts: 'cartesia' },
    config: [
      {
        service: 'llm',
        options: [
          { name: 'initial_messages', value: [{ role: 'system', content: 'You are a host.' }] },
          { name: 'run_on_config', value: true },
        ],
      },
    ],
    api_keys: { deepgram: 'bench', openai: 'bench', cartesia: 'bench' },
  };
}

async function main(): Promise<void> {
  const { values: args } = parseArgs({
    options: {
      concurrency: { type: 'string', default: '3' },
      'latency-calls': { type: 'string', default: '4' },
      'noise-calls': { type: 'string', default: '2' },
      out: { type: 'string', default: 'bench-turn-taking.json' },
      /** Comma-separated parts to run: latency, engagement, noise (default all). */
      parts: { type: 'string', default: 'latency,engagement,noise' },
    },
  });
  const pinning = cpuPinning();
  process.stdout.write(`${pinning.describe}\n`);
  const emulators = await startEmulateProcess(benchEmulatorArgs(), pinning.load);
  const server = await startServerProcess(
    {
      SWITCHBOARD_DEEPGRAM_URL: emulators.url,
      SWITCHBOARD_OPENAI_URL: emulators.url,
      SWITCHBOARD_CARTESIA_URL: emulators.url,
    },
    [],
    pinning.server,
  );
  try {
    const id = await createBotConfig(server.baseUrl, turnTakingBotConfig());
    await server.logged('voice activity model ready');
    process.stdout.write('turn-taking phase: held-apart speech, default VAD settings, instant mode\n');
    const samples = await runTurnTakingPhase({
      wssUrl: `${server.baseUrl.replace(/^http/, 'ws')}/ws/twilio/${id}`,
      concurrency: Number(args.concurrency),
      latencyCalls: Number(args['latency-calls']),
      noiseCalls: Number(args['noise-calls']),
      parts: new Set(args.parts.split(',')),
      baseUrl: server.baseUrl,
      serverCalls: server.calls,
    });
    process.stdout.write(`\n${formatTable(turnTakingRows(samples))}\n\n${lateCauses(samples)}\n`);
    writeFileSync(args.out, `${JSON.stringify(samples, null, 2)}\n`);
    process.stdout.write(`\nwrote ${args.out}\n`);
  } finally {
    await server.stop();
    await emulators.stop();
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  main().catch((err: unknown) => {
    process.stderr.write(`bench failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exitCode = 1;
  });
}
