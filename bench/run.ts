import { writeFileSync } from 'node:fs';
import { availableParallelism, totalmem } from 'node:os';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import type { EmulatorLatencies } from '../src/tools/emulators/types.js';
import { type CapacityPoint, measureCapacity, startEmulateProcess } from './capacity.js';
import { cpuPinning } from './cpu-pinning.js';
import { type BargeInSamples, runBargeInPhase } from './barge-in.js';
import { BENCH_LATENCIES, benchEmulatorArgs, runLatencyPhase } from './latency.js';
import { lateCauses, runTurnTakingPhase, turnTakingBotConfig, turnTakingRows } from './turn-taking.js';
import { createBotConfig, scrapeMetrics, startServerProcess } from './server-process.js';
import { type BudgetRow, formatTable, percentile } from './report.js';
import { describeCallRecords, measureCallRecords } from './call-records.js';
import { type FunctionCallSamples, functionCallRows, runFunctionCallPhase } from './function-calls.js';

/**
 * `npm run bench`: the server (built, in its own process) against the vendor emulators at fixed,
 * known latency, with the figures beside their budgets (README.md, "Load testing and the benchmark"). A script, not a
 * test: it prints and writes JSON, and never fails on a slow machine.
 */

const { values: args } = parseArgs({
  options: {
    calls: { type: 'string', default: '12' },
    'barge-in-calls': { type: 'string', default: '8' },
    concurrency: { type: 'string', default: '3' },
    out: { type: 'string', default: 'bench-report.json' },
    sweep: { type: 'string', default: '25,50,100,150,200,300' },
    'sweep-duration-s': { type: 'string', default: '20' },
    /** Talking calls on the speech-to-speech profile for its CPU per call; 0 skips it. */
    's2s-calls': { type: 'string', default: '50' },
    /** Answers that need a function, and as many plain ones beside them. */
    'function-calls': { type: 'string', default: '6' },
  },
});

/** The step of the sweep whose CPU and memory per call are compared with the goals (issue 19's figure). */
const COST_CALLS = 50;
const MB = 2 ** 20;

/**
 * The figures before this round of cost work (docs/cost-per-call.md, "On a quiet machine": same
 * machine, 50 talking calls, server pinned to one core), and in brackets before any of it.
 * Printed beside this run's.
 */
const PREVIOUS = {
  cpuPerCallPct: '0.72 % (1.1 % at first)',
  s2sCpuPerCallPct: '0.51 % (0.55 % at first)',
  idleRssMb: '118 MB (253 MB at first)',
  readyRssMb: '227 MB (253 MB at first)',
  memoryPerCallMb: '0.6 MB (1.7 MB at first)',
  carried: '150 on one server core (100 at first)',
};

// The emulated vendors' pace, shared with the other benchmarks (bench/latency.ts).
const LATENCIES: EmulatorLatencies = BENCH_LATENCIES;
const START_SECS = 0.2;
const FIXTURES = fileURLToPath(new URL('../fixtures/audio', import.meta.url));

async function main(): Promise<void> {
  const pinning = cpuPinning();
  process.stdout.write(`${pinning.describe}\n`);
  const emulators = await startEmulateProcess(benchEmulatorArgs(), pinning.load);
  const vendors = emulators.url;
  const server = await startServerProcess(
    {
      SWITCHBOARD_DEEPGRAM_URL: vendors,
      SWITCHBOARD_OPENAI_URL: vendors,
      SWITCHBOARD_CARTESIA_URL: vendors,
      // The function-call phase points its configurations at emulators of its own on this machine.
      SWITCHBOARD_PROVIDER_ALLOW_PRIVATE: 'true',
    },
    [],
    pinning.server,
  );
  try {
    // Idle with nothing configured: the VAD's network is not loaded yet.
    await new Promise((resolve) => setTimeout(resolve, 3000));
    const idleRssBytes = (await scrapeMetrics(server.baseUrl)).get('process_resident_memory_bytes') ?? 0;
    const botConfig = (interruptionMode: 'instant' | 'confirmed') =>
      createBotConfig(server.baseUrl, {
        bot_profile: 'telephony_ws_voice_2024_09',
        services: { stt: 'deepgram', llm: 'openai', tts: 'cartesia' },
        config: [
          { service: 'vad', options: [{ name: 'params', value: { start_secs: START_SECS } }] },
          { service: 'interruption', options: [{ name: 'mode', value: interruptionMode }] },
          {
            service: 'llm',
            options: [
              { name: 'initial_messages', value: [{ role: 'system', content: 'You are a host.' }] },
              { name: 'run_on_config', value: true },
            ],
          },
        ],
        api_keys: { deepgram: 'bench', openai: 'bench', cartesia: 'bench' },
      });
    const streamUrl = (id: string) => `${server.baseUrl.replace(/^http/, 'ws')}/ws/twilio/${id}`;
    const wssUrl = streamUrl(await botConfig('instant'));
    // Ready for calls: a configuration exists, so the server has loaded what calls need.
    await server.logged('voice activity model ready');
    const readyRssBytes = (await scrapeMetrics(server.baseUrl)).get('process_resident_memory_bytes') ?? 0;
    process.stdout.write(
      `latency phase: ${args.calls} calls, ${args.concurrency} at a time, emulated providers at LLM first token ${LATENCIES.llmFirstTokenMs} ms, TTS first byte ${LATENCIES.ttsFirstByteMs} ms\n`,
    );
    const latency = await runLatencyPhase({
      wssUrl,
      calls: Number(args.calls),
      concurrency: Number(args.concurrency),
      latencies: LATENCIES,
      serverCalls: server.calls,
      fixturesDir: FIXTURES,
    });

    const rows: BudgetRow[] = [
      {
        figure: 'bridge overhead per turn, p95 (first frame sent minus provider latency)',
        unit: 'ms',
        measured: percentile(latency.bridgeOverheadMs, 95),
        budget: '< 30',
        ok: (v) => v < 30,
        samples: latency.bridgeOverheadMs.length,
      },
      {
        figure: 'first TTS byte in to first media frame out, p95',
        unit: 'ms',
        measured: percentile(latency.ttsToFrameMs, 95),
        budget: '< 2',
        ok: (v) => v < 2,
        samples: latency.ttsToFrameMs.length,
      },
      {
        figure: 'first TTS byte in to first media frame out, max',
        unit: 'ms',
        measured: percentile(latency.ttsToFrameMs, 100),
        budget: '< 2',
        ok: (v) => v < 2,
        samples: latency.ttsToFrameMs.length,
      },
      {
        figure: 'audio of a cancelled reply received after clear, total',
        unit: 'ms',
        measured: latency.lateAudioMs.reduce((a, b) => a + b, 0),
        budget: '0',
        ok: (v) => v === 0,
        samples: latency.lateAudioMs.length,
      },
      {
        figure:
          'reply latency heard by the caller, p50 (last voiced frame to first bot audio; includes stop_secs and providers)',
        unit: 'ms',
        measured: percentile(latency.replyLatencyMs, 50),
        budget: 'report',
        samples: latency.replyLatencyMs.length,
      },
      {
        figure: 'reply latency heard by the caller, p95',
        unit: 'ms',
        measured: percentile(latency.replyLatencyMs, 95),
        budget: 'report',
        samples: latency.replyLatencyMs.length,
      },
      {
        figure: 'calls failed / protocol violations',
        unit: '',
        measured: latency.failedCalls + latency.violations,
        budget: '0',
        ok: (v) => v === 0,
        samples: Number(args.calls),
      },
    ];
    const bargeIn: Record<'instant' | 'confirmed', BargeInSamples> = {} as never;
    for (const mode of ['instant', 'confirmed'] as const) {
      process.stdout.write(
        `barge-in phase, interruption mode ${mode}: ${args['barge-in-calls']} calls with speech over the answer, and sounds that are not speech\n`,
      );
      bargeIn[mode] = await runBargeInPhase({
        wssUrl: streamUrl(await botConfig(mode)),
        calls: Number(args['barge-in-calls']),
        concurrency: Number(args.concurrency),
        fixturesDir: FIXTURES,
        serverCalls: server.calls,
      });
    }
    rows.push(...bargeInRows(bargeIn));
    process.stdout.write(
      'turn-taking phase: held-apart speech (never tuned on), default VAD settings: reply latency with and without pauses, first and after an interruption; the instant pause engagement rate\n',
    );
    const turnTaking = await runTurnTakingPhase({
      wssUrl: streamUrl(await createBotConfig(server.baseUrl, turnTakingBotConfig())),
      concurrency: Number(args.concurrency),
      latencyCalls: 4,
      noiseCalls: 2,
      baseUrl: server.baseUrl,
      serverCalls: server.calls,
    });
    rows.push(...turnTakingRows(turnTaking));
    process.stdout.write(`${lateCauses(turnTaking)}\n`);
    process.stdout.write(
      `function-call phase: ${args['function-calls']} answers that need one function (a webhook answering in 200 ms), and as many plain answers\n`,
    );
    const functionCalls: FunctionCallSamples = await runFunctionCallPhase({
      baseUrl: server.baseUrl,
      calls: Number(args['function-calls']),
      concurrency: Number(args.concurrency),
      serverCalls: server.calls,
      fixturesDir: FIXTURES,
      loadCpus: pinning.load,
    });
    rows.push(...functionCallRows(functionCalls));
    process.stdout.write(`\n${formatTable(rows)}\n`);

    // Capacity: each step of the sweep; memory per call is counted above the server ready for calls.
    const sweep: CapacityPoint[] = [];
    const durationMs = Number(args['sweep-duration-s']) * 1000;
    for (const calls of args.sweep
      .split(',')
      .map(Number)
      .filter((n) => n > 0)) {
      process.stdout.write(`\ncapacity: ${calls} simultaneous calls for ${durationMs / 1000} s ... `);
      const point = await measureCapacity({
        baseUrl: server.baseUrl,
        wssUrl,
        calls,
        durationMs,
        warmUpMs: Math.min(6000, durationMs / 3),
        fixturesDir: FIXTURES,
        idleRssBytes: readyRssBytes,
        loadCpus: pinning.load,
        serverPid: server.child.pid,
      });
      sweep.push(point);
      process.stdout.write(
        `event loop p99 ${point.eventLoopP99Ms} ms (max ${point.eventLoopMaxMs}), playout ticks late >20 ms: ${point.lateTicks}/${point.ticks}, ` +
          `CPU ${point.cpuPerCallPct}% of a core per call${threadSplit(point)}, ${point.memoryPerCallMb} MB per call, failed ${point.failedCalls}, ` +
          `underruns ${point.underruns}, reply p50 ${point.replyLatencyP50Ms} ms, generator lag ${point.generatorClockMaxLagMs} ms: ${point.withinBudget ? 'within budget' : 'OVER BUDGET'}\n`,
      );
      // Far past the budget, larger steps only take longer to say the same (once the step whose
      // CPU per call is compared with the goal has run).
      if ((point.eventLoopP99Ms > 200 || point.failedCalls > calls / 2) && calls >= COST_CALLS) break;
      await new Promise((resolve) => setTimeout(resolve, 3000));
    }
    const carried = sweep.filter((p) => p.withinBudget).reduce((n, p) => Math.max(n, p.calls), 0);
    const costPoint = sweep.find((p) => p.calls === COST_CALLS);
    const s2sPoint = await measureSpeechToSpeech(
      server.baseUrl,
      readyRssBytes,
      pinning.load,
      durationMs,
      server.child.pid,
    );
    const capacityRows: BudgetRow[] = [
      {
        figure: `server CPU per talking call, pipeline, at ${COST_CALLS} calls`,
        unit: '% of a core',
        measured: costPoint?.cpuPerCallPct ?? null,
        budget: '<= 0.45',
        ok: (v) => v <= 0.45,
        samples: costPoint ? 1 : 0,
        previous: PREVIOUS.cpuPerCallPct,
      },
      {
        figure: `server CPU per talking call, speech-to-speech, at ${s2sPoint?.calls ?? 0} calls`,
        unit: '% of a core',
        measured: s2sPoint?.cpuPerCallPct ?? null,
        budget: '<= 0.45',
        ok: (v) => v <= 0.45,
        samples: s2sPoint ? 1 : 0,
        previous: PREVIOUS.s2sCpuPerCallPct,
      },
      {
        figure: 'server RSS idle, nothing configured',
        unit: 'MB',
        measured: idleRssBytes / MB,
        budget: '<= 100',
        ok: (v) => v <= 100,
        samples: 1,
        previous: PREVIOUS.idleRssMb,
      },
      {
        figure: 'server RSS idle, ready for calls (VAD network loaded)',
        unit: 'MB',
        measured: readyRssBytes / MB,
        budget: 'report',
        samples: 1,
        previous: PREVIOUS.readyRssMb,
      },
      {
        figure: `server memory per call above ready, at ${COST_CALLS} calls`,
        unit: 'MB',
        measured: costPoint?.memoryPerCallMb ?? null,
        budget: '<= 1',
        ok: (v) => v <= 1,
        samples: costPoint ? 1 : 0,
        previous: PREVIOUS.memoryPerCallMb,
      },
      {
        figure: 'simultaneous calls carried with event-loop p99 < 20 ms and no frame late > 20 ms',
        unit: 'calls',
        measured: carried,
        budget: '>= 300',
        ok: (v) => v >= 300,
        samples: sweep.length,
        previous: PREVIOUS.carried,
      },
      {
        figure: 'server CPU per call (at the largest step carried)',
        unit: '% of a core',
        measured: sweep.find((p) => p.calls === carried)?.cpuPerCallPct ?? null,
        budget: 'report',
        samples: 1,
      },
      {
        figure: 'server memory per call (at the largest step carried)',
        unit: 'MB',
        measured: sweep.find((p) => p.calls === carried)?.memoryPerCallMb ?? null,
        budget: 'report',
        samples: 1,
      },
    ];
    process.stdout.write(
      `\n${pinning.describe}; CPU is the server process's CPU time (all its threads) over the steady window\n`,
    );
    // What each call's record costs, beside the call's own CPU just measured (in this process, on a real store).
    const callCpuPct = costPoint?.cpuPerCallPct ?? 0.52;
    const callRecords = await measureCallRecords({
      calls: 300,
      turns: 12,
      callCpuPctOfCore: callCpuPct,
      databaseUrl: process.env.DATABASE_URL,
    });
    process.stdout.write(
      `\n${describeCallRecords(callRecords, callCpuPct, process.env.DATABASE_URL ? 'PostgreSQL' : 'SQLite')}\n`,
    );
    capacityRows.push({
      figure: 'CPU a call spends on its record and transcript, share of the call’s own',
      unit: '%',
      measured: callRecords.shareOfCallPct.transcript,
      budget: '< 2',
      ok: (v) => v < 2,
      samples: callRecords.calls,
    });
    process.stdout.write(`\n${formatTable([...rows, ...capacityRows])}\n`);
    writeFileSync(
      args.out,
      `${JSON.stringify({ machine: machineInfo(), pinning: pinning.describe, s2s: s2sPoint, callRecords, latencies: LATENCIES, startSecs: START_SECS, figures: [...rows, ...capacityRows].map(({ ok, ...row }) => ({ ...row, withinBudget: ok && row.measured !== null ? ok(row.measured) : null })), sweep, samples: { ...latency, bargeIn, turnTaking, functionCalls } }, null, 2)}\n`,
    );
    process.stdout.write(`\nwrote ${args.out}\n`);
  } finally {
    await server.stop();
    await emulators.stop();
  }
}

/** " (main thread x, VAD worker y, other z)" where the bench could read the server's threads. */
function threadSplit(point: CapacityPoint): string {
  const split = point.cpuPerCallByThreadPct;
  return split ? ` (main thread ${split.main}, busiest other thread ${split.busiestOther}, rest ${split.rest})` : '';
}

/**
 * CPU per call on the speech-to-speech profile (OpenAI Realtime against the emulator): the same
 * talking calls as the sweep, on a configuration of its own.
 */
async function measureSpeechToSpeech(
  baseUrl: string,
  readyRssBytes: number,
  loadCpus: string | undefined,
  durationMs: number,
  serverPid: number | undefined,
): Promise<CapacityPoint | undefined> {
  const calls = Number(args['s2s-calls']);
  if (!(calls > 0)) return undefined;
  const id = await createBotConfig(baseUrl, {
    bot_profile: 'openai_realtime_beta_2024_10',
    services: { llm: 'openai_realtime' },
    config: [
      {
        service: 'llm',
        options: [
          { name: 'initial_messages', value: [{ role: 'system', content: 'You are a host.' }] },
          { name: 'run_on_config', value: true },
        ],
      },
    ],
    api_keys: { openai: 'bench' },
  });
  process.stdout.write(`\nspeech-to-speech: ${calls} simultaneous calls for ${durationMs / 1000} s ... `);
  const wssUrl = `${baseUrl.replace(/^http/, 'ws')}/ws/twilio/${id}`;
  const point = await measureCapacity({
    baseUrl,
    wssUrl,
    calls,
    durationMs,
    warmUpMs: Math.min(6000, durationMs / 3),
    fixturesDir: FIXTURES,
    idleRssBytes: readyRssBytes,
    loadCpus,
    serverPid,
  });
  process.stdout.write(
    `CPU ${point.cpuPerCallPct}% of a core per call${threadSplit(point)}, event loop p99 ${point.eventLoopP99Ms} ms, failed ${point.failedCalls}\n`,
  );
  return point;
}

/** Onset → clear, false stops, resume time and words lost, for `instant` beside `confirmed` (the behaviour before it). */
function bargeInRows(samples: Record<'instant' | 'confirmed', BargeInSamples>): BudgetRow[] {
  const rows: BudgetRow[] = [];
  for (const mode of ['instant', 'confirmed'] as const) {
    const s = samples[mode];
    const instant = mode === 'instant';
    const perMinute = s.noiseMinutes > 0 ? Math.round((s.falseStops / s.noiseMinutes) * 10) / 10 : null;
    rows.push(
      {
        figure: `barge-in (${mode}): caller speech onset to clear received, p50`,
        unit: 'ms',
        measured: percentile(s.onsetToClearMs, 50),
        budget: 'report',
        samples: s.onsetToClearMs.length,
      },
      instant
        ? {
            figure: 'barge-in (instant): caller speech onset to clear received, p95',
            unit: 'ms',
            measured: percentile(s.onsetToClearMs, 95),
            budget: '<= 120',
            ok: (v) => v <= 120,
            samples: s.onsetToClearMs.length,
          }
        : {
            figure: `barge-in (confirmed): caller speech onset to clear received, p95`,
            unit: 'ms',
            measured: percentile(s.onsetToClearMs, 95),
            budget: `report (start_secs ${START_SECS * 1000} + a window)`,
            samples: s.onsetToClearMs.length,
          },
      {
        figure: `false stops (${mode}) per minute of non-speech over the bot (the bot stopped, then resumed)`,
        unit: '/min',
        measured: perMinute,
        budget: 'report',
        samples: s.falseStops,
      },
      {
        figure: `false stops (${mode}): the bot's silence, clear to the reply resuming, p95`,
        unit: 'ms',
        measured: percentile(s.resumeMs, 95),
        budget: instant ? '<= 300' : 'report',
        ok: instant ? (v) => v <= 300 : undefined,
        samples: s.resumeMs.length,
      },
      {
        figure: `replies cut off during the non-speech (${mode}; the emulated STT transcribes clatter into a turn)`,
        unit: 'replies',
        measured: s.cutReplies,
        budget: 'report',
        samples: s.cutReplies,
      },
      {
        figure: `barge-in phase (${mode}): calls failed`,
        unit: '',
        measured: s.failedCalls,
        budget: '0',
        ok: (v) => v === 0,
        samples: s.onsetToClearMs.length,
      },
    );
  }
  rows.push({
    figure: 'replies lost to stopping on suspicion (cut off in instant beyond confirmed)',
    unit: 'replies',
    measured: Math.max(0, samples.instant.cutReplies - samples.confirmed.cutReplies),
    budget: '0',
    ok: (v) => v === 0,
    samples: samples.instant.cutReplies,
  });
  return rows;
}

function machineInfo(): Record<string, unknown> {
  return {
    node: process.version,
    platform: process.platform,
    arch: process.arch,
    cpus: availableParallelism(),
    memoryGb: Math.round(totalmem() / 2 ** 30),
  };
}

main().catch((err: unknown) => {
  process.stderr.write(`bench failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exitCode = 1;
});
