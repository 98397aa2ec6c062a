import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { startEmulateProcess, threadCpuSeconds } from './capacity.js';
import { cpuPinning, pinnedCommand } from './cpu-pinning.js';
import { BENCH_REPLY, benchEmulatorArgs } from './latency.js';
import type { PeersCallerSummary } from './peers-caller.js';
import {
  PEERS,
  type PeerDefinition,
  cpuSeconds,
  establishedConnections,
  preparePeer,
  rssBytes,
  startPeer,
} from './peers-setup.js';
import { percentile } from './report.js';
import { createBotConfig, startServerProcess } from './server-process.js';
import { talkingBotConfig } from './talking-bot.js';

/**
 * `npm run bench:peers`: Switchboard beside the two Twilio samples people start from, in one run,
 * under the same emulated vendors and the same emulated Twilio caller. Four subjects: the
 * Switchboard pipeline (Deepgram STT, OpenAI chat, Cartesia TTS) and twilio-labs/call-gpt
 * (Deepgram STT, OpenAI chat, Deepgram Aura TTS); Switchboard speech-to-speech on OpenAI Realtime
 * and twilio-samples/speech-assistant-openai-realtime-api-node. A script, not a test: it prints.
 *
 *   npm run bench:peers -- --call-gpt ../peers/call-gpt --realtime-sample ../peers/speech-assistant \
 *     [--calls 50] [--duration-s 30] [--rounds 2] [--reinstall] [--only sb-s2s,realtime-sample]
 *     [--base <checkout with dist/>] [--sb-node-args "--cpu-prof --cpu-prof-dir=.tmp/prof"]
 *     [--paired-rounds 2]
 *
 * A sample not given is skipped (its Switchboard counterpart still runs). Each round measures the
 * subjects one after another on the server core (alternating the order between rounds, so drift
 * on the shared machine falls on both sides), each from a fresh start:
 *   1. idle before calls: started (Switchboard: configured, VAD model loaded), 3 s without calls;
 *   2. warm-up: `calls` simultaneous calls, each once through the script (greeting, a question,
 *      talking over the answer 700 ms in), then 3 s without calls: RSS after warm-up; and 10 s
 *      after the calls: RSS settled, what a server holds between bursts of calls;
 *   3. the load: `calls` simultaneous calls saying the script in a loop for `duration-s`; CPU per
 *      talking call is the process's CPU time (every thread, /proc) over the steady window divided
 *      by the calls connected over it (/proc/net: a call the server closed does not count), memory
 *      per call the RSS at the window's end above RSS after warm-up, divided the same way.
 * Reply and barge-in latencies are the caller's (simulator) over phases 2 and 3. Ratios are only
 * computed within a round: absolute figures move with the machine's load (printed with each round).
 *
 * Then CPU side by side (`--paired-rounds`, default 2; 0 skips it): each Switchboard subject and its
 * sample (and, with --base, each build and the base build) started together on the server core,
 * warmed up together, and loaded together, each with its own `calls` callers; CPU per talking call
 * of both over the same window (measurePair). One subject measured minutes after the other sees
 * another machine (the same build moved by 1.5x between runs on the shared box); two measured at
 * once see the same one, so this ratio is the CPU verdict. `--rounds 0` runs only this part.
 *
 * `--base` adds another build of Switchboard (its checkout's dist/) as subjects of their own
 * (`sb-pipeline-base`, `sb-s2s-base`, each beside its sample and this build), so a change is
 * measured against the build before it in the same sitting; `--sb-node-args` are options for node
 * on every Switchboard server (a profile: `--cpu-prof --cpu-prof-dir=<dir>`); PEER_NODE_OPTIONS in
 * the environment is NODE_OPTIONS for the samples (`--perf-basic-prof`, to profile both with perf).
 */

const { values: args } = parseArgs({
  options: {
    'call-gpt': { type: 'string' },
    'realtime-sample': { type: 'string' },
    calls: { type: 'string', default: '50' },
    'duration-s': { type: 'string', default: '30' },
    rounds: { type: 'string', default: '2' },
    reinstall: { type: 'boolean', default: false },
    /** Comma-separated subjects to run (default all): sb-pipeline, call-gpt, sb-s2s, realtime-sample. */
    only: { type: 'string' },
    out: { type: 'string', default: 'bench-peers.json' },
    base: { type: 'string' },
    'sb-node-args': { type: 'string', default: '' },
    /** Rounds of the side-by-side CPU measurement (each pair's two servers under load at once); 0 skips it. */
    'paired-rounds': { type: 'string', default: '2' },
  },
});

const FIXTURES = fileURLToPath(new URL('../fixtures/audio', import.meta.url));
const CALLER = fileURLToPath(new URL('./peers-caller.ts', import.meta.url));
const ROOT = fileURLToPath(new URL('..', import.meta.url));
const WARM_UP_SETTLE_MS = 3000;
/** RSS "settled": this long after the warm-up's calls end, the memory a server keeps between bursts of calls. */
const SETTLED_MS = 10_000;
const LOAD_WARM_UP_MS = 8000;
const MB = 2 ** 20;

/**
 * call-gpt's prompt has the model put a bullet every 5 to 10 words, and it speaks each part as it
 * comes; the same reply with those bullets, so it starts speaking after the first part as ours does
 * after the first sentence.
 */
const CALL_GPT_REPLY =
  'Sure. • We have a table for two at eight, • and another one at nine • if you would like a later dinner • by the window, with a view of the harbour lights.';

type SubjectName = 'sb-pipeline' | 'sb-pipeline-base' | 'call-gpt' | 'sb-s2s' | 'sb-s2s-base' | 'realtime-sample';

interface Running {
  pid: number;
  port: number;
  /** Switchboard's warnings and errors so far, by message (why a call was closed, for one). */
  warnings?: Map<string, number>;
  wsUrl: string;
  stop(): Promise<void>;
}

interface Measurement {
  subject: SubjectName;
  round: number;
  loadAverage: number[];
  idleRssMb: number;
  warmRssMb: number;
  /** RSS 10 s after the warm-up's calls ended (still no call). */
  settledRssMb: number;
  memoryPerCallMb: number;
  /** Calls connected over the load's window (mean of its start and end). */
  talkingCalls: number;
  cpuPerCallPct: number;
  /** Of cpuPerCallPct, the process's main thread (the event loop); the rest is every other thread. */
  mainThreadPerCallPct: number;
  /** Read and write system calls per talking call per second over the window (`/proc/<pid>/io`): the sockets' share of the work, whatever the machine's load. */
  syscallsPerCallPerSec: { read: number; write: number };
  /** The other threads' share of cpuPerCallPct, by thread name (V8's GC helpers, libuv's pool, workers). */
  otherThreadsPerCallPct: Record<string, number>;
  replyP50Ms: number | null;
  replyP95Ms: number | null;
  bargeInP50Ms: number | null;
  bargeInP95Ms: number | null;
  replies: number;
  bargeIns: number;
  bargeInsUnanswered: number;
  outcomes: Record<string, number>;
  /** Switchboard's warning and error lines over the measurement, by message. */
  serverWarnings?: Record<string, number>;
  /** How late the callers' clocks ran at worst: past about 2 s, a caller's catch-up burst is refused by Switchboard's audio budget. */
  callerClockMaxLagMs: number;
}

const LABELS: Record<SubjectName, string> = {
  'sb-pipeline': 'Switchboard pipeline',
  'call-gpt': 'twilio-labs/call-gpt',
  'sb-s2s': 'Switchboard speech-to-speech (OpenAI Realtime)',
  'realtime-sample': 'speech-assistant-openai-realtime-api-node',
  'sb-pipeline-base': 'Switchboard pipeline, base build',
  'sb-s2s-base': 'Switchboard speech-to-speech, base build',
};
const PEER_OF: Partial<Record<SubjectName, SubjectName>> = {
  'sb-pipeline': 'call-gpt',
  'sb-s2s': 'realtime-sample',
  'sb-pipeline-base': 'call-gpt',
  'sb-s2s-base': 'realtime-sample',
};
/** With --base: each build's subject beside the base build's, in the same round. */
const BASE_OF: Partial<Record<SubjectName, SubjectName>> = {
  'sb-pipeline': 'sb-pipeline-base',
  'sb-s2s': 'sb-s2s-base',
};

/** Calls per caller process: one event loop for 50 calls lags seconds behind on a loaded machine. */
const CALLS_PER_CALLER = 25;

function runCallerProcess(wsUrl: string, calls: number, durationMs: number, mode: 'once' | 'loop', cpus?: string) {
  const [command, callerArgs] = pinnedCommand(cpus, [
    '--import',
    'tsx',
    CALLER,
    wsUrl,
    String(calls),
    String(durationMs),
    mode,
    FIXTURES,
  ]);
  const child = spawn(command, callerArgs, { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout!.on('data', (chunk: Buffer) => (out += chunk.toString()));
  return once(child, 'exit').then(() => JSON.parse(out.trim().split('\n').at(-1) ?? '{}') as PeersCallerSummary);
}

/** `calls` calls from as many caller processes as needed, their summaries merged. */
async function runCaller(
  wsUrl: string,
  calls: number,
  durationMs: number,
  mode: 'once' | 'loop',
  cpus?: string,
): Promise<PeersCallerSummary> {
  const parts: Array<Promise<PeersCallerSummary>> = [];
  for (let left = calls; left > 0; left -= CALLS_PER_CALLER)
    parts.push(runCallerProcess(wsUrl, Math.min(left, CALLS_PER_CALLER), durationMs, mode, cpus));
  const summaries = await Promise.all(parts);
  const merged: PeersCallerSummary = {
    calls: 0,
    outcomes: {},
    replyLatenciesMs: [],
    bargeInLatenciesMs: [],
    bargeInsUnanswered: 0,
    generatorClockMaxLagMs: 0,
  };
  for (const s of summaries) {
    merged.calls += s.calls ?? 0;
    for (const [k, n] of Object.entries(s.outcomes ?? {})) merged.outcomes[k] = (merged.outcomes[k] ?? 0) + n;
    merged.replyLatenciesMs.push(...(s.replyLatenciesMs ?? []));
    merged.bargeInLatenciesMs.push(...(s.bargeInLatenciesMs ?? []));
    merged.bargeInsUnanswered += s.bargeInsUnanswered ?? 0;
    merged.generatorClockMaxLagMs = Math.max(merged.generatorClockMaxLagMs, s.generatorClockMaxLagMs ?? 0);
  }
  return merged;
}

/** A thread's name (`/proc/<pid>/task/<tid>/comm`: node's are "node", "V8Worker", "libuv-worker", ...). */
function threadName(pid: number, tid: string): string {
  try {
    return readFileSync(`/proc/${pid}/task/${tid}/comm`, 'utf8').trim();
  } catch {
    return 'ended';
  }
}

/** Read and write system calls a process has made (`/proc/<pid>/io`: syscr, syscw; writev counts as one). */
function syscallCounts(pid: number): { read: number; write: number } {
  try {
    const io = readFileSync(`/proc/${pid}/io`, 'utf8');
    return {
      read: Number(/syscr:\s+(\d+)/.exec(io)?.[1] ?? 0),
      write: Number(/syscw:\s+(\d+)/.exec(io)?.[1] ?? 0),
    };
  } catch {
    return { read: 0, write: 0 };
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function startSwitchboard(
  kind: 'pipeline' | 's2s',
  vendors: string,
  cpus: string | undefined,
  root: string = ROOT,
): Promise<Running> {
  const server = await startServerProcess(
    { SWITCHBOARD_DEEPGRAM_URL: vendors, SWITCHBOARD_OPENAI_URL: vendors, SWITCHBOARD_CARTESIA_URL: vendors },
    args['sb-node-args'].split(' ').filter((w) => w !== ''),
    cpus,
    root,
  );
  const id = await createBotConfig(server.baseUrl, talkingBotConfig(kind === 's2s'));
  await server.logged('voice activity model ready');
  const warnings = new Map<string, number>();
  server.child.stdout!.on('data', (chunk: Buffer) => {
    for (const line of chunk.toString().split('\n')) {
      if (!/"level":(40|50)/.test(line)) continue;
      const msg = /"msg":"([^"]*)"/.exec(line)?.[1] ?? 'unparsed line';
      const why = /"why":"([^"]*)"/.exec(line)?.[1];
      const key = why ? `${msg} (${why})` : msg;
      warnings.set(key, (warnings.get(key) ?? 0) + 1);
    }
  });
  return {
    warnings,
    pid: server.child.pid!,
    port: Number(new URL(server.baseUrl).port),
    // A host name, as a carrier is given one.
    wsUrl: `${server.baseUrl.replace('http://127.0.0.1', 'ws://localhost')}/ws/twilio/${id}`,
    stop: () => server.stop(),
  };
}

async function measure(
  subject: SubjectName,
  round: number,
  start: () => Promise<Running>,
  calls: number,
  durationMs: number,
  loadCpus: string | undefined,
): Promise<Measurement> {
  const running = await start();
  try {
    await sleep(WARM_UP_SETTLE_MS);
    const idleRss = rssBytes(running.pid);
    const warmUp = await runCaller(running.wsUrl, calls, 60_000, 'once', loadCpus);
    await sleep(WARM_UP_SETTLE_MS);
    const warmRss = rssBytes(running.pid);
    await sleep(SETTLED_MS - WARM_UP_SETTLE_MS);
    const settledRss = rssBytes(running.pid);
    // Connections that are not calls (a keep-alive left from configuring the server) are not counted.
    const notCalls = establishedConnections(running.port);
    const load = runCaller(running.wsUrl, calls, durationMs, 'loop', loadCpus);
    await sleep(LOAD_WARM_UP_MS);
    const cpuBefore = cpuSeconds(running.pid);
    const threadsBefore = threadCpuSeconds(running.pid);
    const ioBefore = syscallCounts(running.pid);
    const startedAt = performance.now();
    const talkingBefore = establishedConnections(running.port) - notCalls;
    await sleep(durationMs - LOAD_WARM_UP_MS - 2000);
    const cpuUsed = cpuSeconds(running.pid) - cpuBefore;
    const threadsAfter = threadCpuSeconds(running.pid);
    const ioAfter = syscallCounts(running.pid);
    const mainUsed = (threadsAfter?.get(String(running.pid)) ?? 0) - (threadsBefore?.get(String(running.pid)) ?? 0);
    const otherUsed = new Map<string, number>();
    for (const [tid, secs] of threadsAfter ?? []) {
      if (tid === String(running.pid)) continue;
      const name = threadName(running.pid, tid);
      otherUsed.set(name, (otherUsed.get(name) ?? 0) + secs - (threadsBefore?.get(tid) ?? 0));
    }
    // Calls carried over the window (a server may have closed some): CPU is divided by these.
    const talking = (talkingBefore + establishedConnections(running.port) - notCalls) / 2;
    const windowSecs = (performance.now() - startedAt) / 1000;
    const loadRss = rssBytes(running.pid);
    const loaded = await load;
    const replies = [...warmUp.replyLatenciesMs, ...loaded.replyLatenciesMs].sort((a, b) => a - b);
    const bargeIns = [...warmUp.bargeInLatenciesMs, ...loaded.bargeInLatenciesMs].sort((a, b) => a - b);
    const outcomes: Record<string, number> = {};
    for (const s of [warmUp, loaded])
      for (const [k, n] of Object.entries(s.outcomes ?? {})) outcomes[k] = (outcomes[k] ?? 0) + n;
    const round1 = (v: number) => Math.round(v * 10) / 10;
    return {
      subject,
      round,
      loadAverage: loadavg().map((v) => round1(v)),
      idleRssMb: round1(idleRss / MB),
      warmRssMb: round1(warmRss / MB),
      settledRssMb: round1(settledRss / MB),
      memoryPerCallMb: talking > 0 ? Math.round(((loadRss - warmRss) / talking / MB) * 100) / 100 : 0,
      talkingCalls: talking,
      cpuPerCallPct: talking > 0 ? Math.round((cpuUsed / windowSecs / talking) * 100_000) / 1000 : 0,
      mainThreadPerCallPct: talking > 0 ? Math.round((mainUsed / windowSecs / talking) * 100_000) / 1000 : 0,
      syscallsPerCallPerSec: {
        read: talking > 0 ? round1((ioAfter.read - ioBefore.read) / windowSecs / talking) : 0,
        write: talking > 0 ? round1((ioAfter.write - ioBefore.write) / windowSecs / talking) : 0,
      },
      otherThreadsPerCallPct: Object.fromEntries(
        [...otherUsed]
          .filter(([, secs]) => secs > 0)
          .map(([name, secs]) => [name, Math.round((secs / windowSecs / Math.max(talking, 1)) * 100_000) / 1000]),
      ),
      replyP50Ms: percentile(replies, 50),
      replyP95Ms: percentile(replies, 95),
      bargeInP50Ms: percentile(bargeIns, 50),
      bargeInP95Ms: percentile(bargeIns, 95),
      replies: replies.length,
      bargeIns: bargeIns.length,
      bargeInsUnanswered: warmUp.bargeInsUnanswered + loaded.bargeInsUnanswered,
      outcomes,
      serverWarnings: running.warnings ? Object.fromEntries(running.warnings) : undefined,
      callerClockMaxLagMs: Math.round(Math.max(warmUp.generatorClockMaxLagMs, loaded.generatorClockMaxLagMs)),
    };
  } finally {
    await running.stop();
  }
}

interface PairedMeasurement {
  round: number;
  subjects: [SubjectName, SubjectName];
  cpuPerCallPct: [number, number];
  mainThreadPerCallPct: [number, number];
  talkingCalls: [number, number];
  loadAverage: number[];
  callerClockMaxLagMs: number;
}

/** CPU time (every thread, and the main thread) and the calls connected, at one moment. */
function cpuSnapshot(running: Running, notCalls: number) {
  return {
    cpu: cpuSeconds(running.pid),
    main: threadCpuSeconds(running.pid)?.get(String(running.pid)) ?? 0,
    talking: establishedConnections(running.port) - notCalls,
  };
}

/**
 * Two subjects measured at the same time: both servers on the server core, each with its own
 * `calls` callers saying the script in a loop, CPU per talking call over the same window. Taken
 * minutes apart, the same build's figure moves with the machine by more than the goals' margins
 * (docs/cost-per-call.md); at the same moment, both sides see the same machine. Each server is
 * started fresh and warmed up with one pass of the script, as in `measure`.
 */
async function measurePair(
  round: number,
  subjects: [SubjectName, SubjectName],
  starters: [() => Promise<Running>, () => Promise<Running>],
  calls: number,
  durationMs: number,
  loadCpus: string | undefined,
  /** Start (and so warm) the second subject first: rounds alternate it. */
  secondFirst: boolean,
): Promise<PairedMeasurement> {
  const running: Running[] = [];
  try {
    const first = secondFirst ? 1 : 0;
    running[first] = await starters[first]!();
    running[1 - first] = await starters[1 - first]!();
    await sleep(WARM_UP_SETTLE_MS);
    await Promise.all(running.map((r) => runCaller(r.wsUrl, calls, 60_000, 'once', loadCpus)));
    await sleep(WARM_UP_SETTLE_MS);
    const notCalls = running.map((r) => establishedConnections(r.port));
    const loads = running.map((r) => runCaller(r.wsUrl, calls, durationMs, 'loop', loadCpus));
    await sleep(LOAD_WARM_UP_MS);
    const before = running.map((r, i) => cpuSnapshot(r, notCalls[i]!));
    const startedAt = performance.now();
    await sleep(durationMs - LOAD_WARM_UP_MS - 2000);
    const after = running.map((r, i) => cpuSnapshot(r, notCalls[i]!));
    const windowSecs = (performance.now() - startedAt) / 1000;
    const summaries = await Promise.all(loads);
    const perCall = (i: number, used: number) => {
      const talking = (before[i]!.talking + after[i]!.talking) / 2;
      return talking > 0 ? Math.round((used / windowSecs / talking) * 100_000) / 1000 : 0;
    };
    const pair = <T>(f: (i: number) => T): [T, T] => [f(0), f(1)];
    return {
      round,
      subjects,
      cpuPerCallPct: pair((i) => perCall(i, after[i]!.cpu - before[i]!.cpu)),
      mainThreadPerCallPct: pair((i) => perCall(i, after[i]!.main - before[i]!.main)),
      talkingCalls: pair((i) => (before[i]!.talking + after[i]!.talking) / 2),
      loadAverage: loadavg().map((v) => Math.round(v * 10) / 10),
      callerClockMaxLagMs: Math.round(Math.max(...summaries.map((s) => s.generatorClockMaxLagMs))),
    };
  } finally {
    await Promise.all(running.map((r) => r.stop()));
  }
}

function describePair(m: PairedMeasurement): string {
  const [a, b] = m.subjects;
  const ratio = m.cpuPerCallPct[1] > 0 ? (m.cpuPerCallPct[0] / m.cpuPerCallPct[1]).toFixed(2) : '-';
  return (
    `${a} ${m.cpuPerCallPct[0].toFixed(3)} % (main thread ${m.mainThreadPerCallPct[0].toFixed(3)}, ${m.talkingCalls[0]} talking), ` +
    `${b} ${m.cpuPerCallPct[1].toFixed(3)} % (main thread ${m.mainThreadPerCallPct[1].toFixed(3)}, ${m.talkingCalls[1]} talking): ` +
    `${ratio}x; callers' clocks up to ${m.callerClockMaxLagMs} ms late; load average ${m.loadAverage.join(' ')}`
  );
}

function describe(m: Measurement): string {
  const ms = (v: number | null) => (v === null ? '-' : `${Math.round(v)}`);
  return [
    `CPU ${m.cpuPerCallPct.toFixed(3)} % of a core per talking call (main thread ${m.mainThreadPerCallPct.toFixed(3)}, others ${JSON.stringify(m.otherThreadsPerCallPct)}; ${m.talkingCalls} talking)`,
    `system calls per call a second: ${m.syscallsPerCallPerSec.read} reads, ${m.syscallsPerCallPerSec.write} writes`,
    `RSS idle ${m.idleRssMb} MB, after warm-up ${m.warmRssMb} MB (10 s after: ${m.settledRssMb} MB), ${m.memoryPerCallMb} MB per call`,
    `reply p50/p95 ${ms(m.replyP50Ms)}/${ms(m.replyP95Ms)} ms (${m.replies})`,
    `barge-in p50/p95 ${ms(m.bargeInP50Ms)}/${ms(m.bargeInP95Ms)} ms (${m.bargeIns}, ${m.bargeInsUnanswered} never cleared)`,
    `calls ${JSON.stringify(m.outcomes)}, callers' clocks up to ${m.callerClockMaxLagMs} ms late`,
    `load average ${m.loadAverage.join(' ')}`,
    ...(m.serverWarnings && Object.keys(m.serverWarnings).length > 0
      ? [`server warnings ${JSON.stringify(m.serverWarnings)}`]
      : []),
  ].join('; ');
}

function ratioTable(results: Measurement[], rounds: number): string {
  const lines: string[] = [];
  const ratio = (a: number | null, b: number | null) =>
    a === null || b === null || b === 0 ? '-' : `${(a / b).toFixed(2)}x`;
  const header =
    '| round | subject | CPU per talking call | RSS idle before calls | RSS after warm-up | RSS 10 s after | memory per call | reply p50 | barge-in p50 |';
  lines.push(header, '|---|---|---|---|---|---|---|---|---|');
  for (let round = 1; round <= rounds; round++) {
    for (const m of results.filter((r) => r.round === round)) {
      lines.push(
        `| ${round} | ${LABELS[m.subject]} | ${m.cpuPerCallPct.toFixed(3)} % | ${m.idleRssMb} MB | ${m.warmRssMb} MB | ${m.settledRssMb} MB | ${m.memoryPerCallMb} MB | ${m.replyP50Ms ?? '-'} ms | ${m.bargeInP50Ms ?? '-'} ms |`,
      );
      for (const peerName of [PEER_OF[m.subject], BASE_OF[m.subject]]) {
        const peer = peerName && results.find((r) => r.round === round && r.subject === peerName);
        if (!peer) continue;
        lines.push(
          `| ${round} | ratio to ${peer.subject} | ${ratio(m.cpuPerCallPct, peer.cpuPerCallPct)} | ${ratio(m.idleRssMb, peer.idleRssMb)} | ${ratio(m.warmRssMb, peer.warmRssMb)} | ${ratio(m.settledRssMb, peer.settledRssMb)} | ${ratio(m.memoryPerCallMb, peer.memoryPerCallMb)} | ${ratio(m.replyP50Ms, peer.replyP50Ms)} | ${ratio(m.bargeInP50Ms, peer.bargeInP50Ms)} |`,
        );
      }
    }
  }
  return lines.join('\n');
}

async function main(): Promise<void> {
  const pinning = cpuPinning();
  const calls = Number(args.calls);
  const durationMs = Number(args['duration-s']) * 1000;
  const rounds = Number(args.rounds);
  if (!(durationMs > LOAD_WARM_UP_MS + 4000))
    throw new Error(`--duration-s must be above ${(LOAD_WARM_UP_MS + 4000) / 1000}`);
  process.stdout.write(
    `${pinning.describe}; load average ${loadavg()
      .map((v) => v.toFixed(2))
      .join(' ')}\n`,
  );

  const checkouts: Partial<Record<PeerDefinition['name'], string>> = {};
  for (const name of ['call-gpt', 'realtime-sample'] as const) {
    const dir = args[name];
    if (dir === undefined) {
      process.stdout.write(`${name}: not given (--${name} <checkout>), skipped\n`);
      continue;
    }
    checkouts[name] = resolve(dir);
    process.stdout.write(`${preparePeer(PEERS[name], checkouts[name], args.reinstall)}\n`);
  }

  const emulators = await startEmulateProcess(benchEmulatorArgs(), pinning.load);
  const callGptArgs = benchEmulatorArgs().map((a) => (a === BENCH_REPLY ? CALL_GPT_REPLY : a));
  const callGptEmulators = checkouts['call-gpt'] ? await startEmulateProcess(callGptArgs, pinning.load) : undefined;
  const starters: Partial<Record<SubjectName, () => Promise<Running>>> = {
    'sb-pipeline': () => startSwitchboard('pipeline', emulators.url, pinning.server),
    'sb-s2s': () => startSwitchboard('s2s', emulators.url, pinning.server),
  };
  if (args.base) {
    const base = resolve(args.base);
    starters['sb-pipeline-base'] = () => startSwitchboard('pipeline', emulators.url, pinning.server, base);
    starters['sb-s2s-base'] = () => startSwitchboard('s2s', emulators.url, pinning.server, base);
  }
  if (checkouts['call-gpt'] && callGptEmulators)
    starters['call-gpt'] = () =>
      startPeer(PEERS['call-gpt'], checkouts['call-gpt']!, callGptEmulators.url, pinning.server);
  if (checkouts['realtime-sample'])
    starters['realtime-sample'] = () =>
      startPeer(PEERS['realtime-sample'], checkouts['realtime-sample']!, emulators.url, pinning.server);
  const only = args.only?.split(',').map((s) => s.trim());
  const order = (
    ['sb-pipeline', 'sb-pipeline-base', 'call-gpt', 'sb-s2s', 'sb-s2s-base', 'realtime-sample'] as const
  ).filter((s) => starters[s] && (!only || only.includes(s)));

  const results: Measurement[] = [];
  const paired: PairedMeasurement[] = [];
  const pairedRounds = Number(args['paired-rounds']);
  try {
    for (let round = 1; round <= rounds; round++) {
      // Alternate which of each pair goes first.
      const ordered = round % 2 === 1 ? order : [...order].reverse();
      for (const subject of ordered) {
        process.stdout.write(`round ${round}, ${LABELS[subject]}: ${calls} calls ... `);
        const m = await measure(subject, round, starters[subject]!, calls, durationMs, pinning.load);
        results.push(m);
        process.stdout.write(`${describe(m)}\n`);
      }
    }
    // Then CPU side by side: each of ours with its sample (and with the base build), both at once.
    const pairs = [...Object.entries(PEER_OF), ...Object.entries(BASE_OF)] as Array<[SubjectName, SubjectName]>;
    for (let round = 1; round <= pairedRounds; round++) {
      for (const [ours, other] of pairs) {
        if (!order.includes(ours) || !order.includes(other)) continue;
        process.stdout.write(`side by side ${round}, ${ours} and ${other}: ${calls} calls each ... `);
        const m = await measurePair(
          round,
          [ours, other],
          [starters[ours]!, starters[other]!],
          calls,
          durationMs,
          pinning.load,
          round % 2 === 0,
        );
        paired.push(m);
        process.stdout.write(`${describePair(m)}\n`);
      }
    }
  } finally {
    await emulators.stop();
    await callGptEmulators?.stop();
  }
  if (results.length > 0) {
    process.stdout.write(`\n${ratioTable(results, rounds)}\n`);
    process.stdout.write(spread(results));
  }
  process.stdout.write(pairedSpread(paired));
  writeFileSync(
    args.out,
    `${JSON.stringify({ pinning: pinning.describe, calls, durationMs, results, paired }, null, 2)}\n`,
  );
  process.stdout.write(`\nwritten to ${args.out}\n`);
}

/** Per ratio, its range over the rounds: how far one round's verdict can be trusted. */
function spread(results: Measurement[]): string {
  const lines: string[] = ['\nratios over the rounds (min to max):'];
  const pairs = [...Object.entries(PEER_OF), ...Object.entries(BASE_OF)] as Array<[SubjectName, SubjectName]>;
  for (const [ours, peer] of pairs) {
    const pairs = [...new Set(results.map((r) => r.round))]
      .map((round) => [
        results.find((r) => r.round === round && r.subject === ours),
        results.find((r) => r.round === round && r.subject === peer),
      ])
      .filter((p): p is [Measurement, Measurement] => p[0] !== undefined && p[1] !== undefined);
    if (pairs.length === 0) continue;
    const range = (f: (m: Measurement) => number | null) => {
      const values = pairs
        .map(([a, b]) => {
          const x = f(a);
          const y = f(b);
          return x === null || y === null || y === 0 ? null : x / y;
        })
        .filter((v): v is number => v !== null);
      return values.length === 0 ? '-' : `${Math.min(...values).toFixed(2)}-${Math.max(...values).toFixed(2)}x`;
    };
    lines.push(
      `  ${LABELS[ours]} / ${peer}: CPU per call ${range((m) => m.cpuPerCallPct)}, RSS after warm-up ${range((m) => m.warmRssMb)} (10 s after: ${range((m) => m.settledRssMb)}), reply p50 ${range((m) => m.replyP50Ms)}, barge-in p50 ${range((m) => m.bargeInP50Ms)}`,
    );
  }
  return `${lines.join('\n')}\n`;
}

/** Per pair measured side by side, its CPU ratio over the rounds. */
function pairedSpread(paired: PairedMeasurement[]): string {
  if (paired.length === 0) return '';
  const lines = ['\nCPU per talking call side by side (both servers under load at once), ratio per round:'];
  const keys = [...new Set(paired.map((m) => m.subjects.join(' / ')))];
  for (const key of keys) {
    const rows = paired.filter((m) => m.subjects.join(' / ') === key);
    const ratios = rows.map((m) => (m.cpuPerCallPct[1] > 0 ? m.cpuPerCallPct[0] / m.cpuPerCallPct[1] : Number.NaN));
    const [ours, other] = rows[0]!.subjects;
    lines.push(
      `  ${LABELS[ours]} / ${other}: ${rows.map((m) => `${m.cpuPerCallPct[0].toFixed(3)} / ${m.cpuPerCallPct[1].toFixed(3)} %`).join(', ')}; ` +
        `${ratios.map((r) => `${r.toFixed(2)}x`).join(', ')}`,
    );
  }
  return `${lines.join('\n')}\n`;
}

main().catch((err: unknown) => {
  process.stderr.write(`bench:peers failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exitCode = 1;
});
