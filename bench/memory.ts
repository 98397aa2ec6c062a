import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { startEmulateProcess } from './capacity.js';
import { cpuPinning, pinnedCommand } from './cpu-pinning.js';
import { benchEmulatorArgs } from './latency.js';
import { cpuSeconds, rssBytes } from './peers-setup.js';
import { createBotConfig, startServerProcess } from './server-process.js';
import { talkingBotConfig } from './talking-bot.js';

/**
 * Where a Switchboard server's memory goes, before and after the warm-up of `npm run bench:peers`
 * (the same caller script, the same emulated vendors), in one process: RSS from /proc, split into
 * file-backed pages, the malloc heap and anonymous mappings (/proc/<pid>/smaps), and what V8 says
 * of its heap spaces, external memory and ArrayBuffers (bench/memory-probe.mjs, preloaded into
 * the server, answers SIGUSR2). A script, not a test: it prints.
 *
 *   npx tsx bench/memory.ts [--calls 50] [--kind pipeline|s2s] [--node-args=...] [--env K=V,...]
 *     [--snapshot] [--loop-s 0]
 */

const { values: args } = parseArgs({
  options: {
    calls: { type: 'string', default: '50' },
    kind: { type: 'string', default: 'pipeline' },
    'node-args': { type: 'string', default: '' },
    env: { type: 'string', default: '' },
    snapshot: { type: 'boolean', default: false },
    'loop-s': { type: 'string', default: '0' },
    gc: { type: 'boolean', default: false },
    /** A checkout whose build (dist/) runs instead of this one's. */
    root: { type: 'string' },
  },
});

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const CALLER = fileURLToPath(new URL('./peers-caller.ts', import.meta.url));
const PROBE = fileURLToPath(new URL('./memory-probe.mjs', import.meta.url));
const FIXTURES = fileURLToPath(new URL('../fixtures/audio', import.meta.url));
const MB = 2 ** 20;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const mb = (bytes: number) => (bytes / MB).toFixed(1);

function callers(wsUrl: string, calls: number, durationMs: number, mode: 'once' | 'loop', cpus?: string) {
  const runs: Array<Promise<unknown>> = [];
  for (let left = calls; left > 0; left -= 25) {
    const [command, callerArgs] = pinnedCommand(cpus, [
      '--import',
      'tsx',
      CALLER,
      wsUrl,
      String(Math.min(left, 25)),
      String(durationMs),
      mode,
      FIXTURES,
    ]);
    const child = spawn(command, callerArgs, { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout!.on('data', (c: Buffer) => (out += c.toString()));
    runs.push(once(child, 'exit').then(() => JSON.parse(out.trim().split('\n').at(-1) ?? '{}')));
  }
  return Promise.all(runs);
}

interface Smaps {
  rss: number;
  file: number;
  heap: number;
  anon: number;
  /** Anonymous mappings of 64 MB reserved or their remainders: glibc's per-thread arenas. */
  arenaLike: number;
  biggestAnon: Array<[number, number]>;
}

function smaps(pid: number): Smaps {
  const text = readFileSync(`/proc/${pid}/smaps`, 'utf8');
  const result: Smaps = { rss: 0, file: 0, heap: 0, anon: 0, arenaLike: 0, biggestAnon: [] };
  let name = '';
  let size = 0;
  for (const line of text.split('\n')) {
    const head = /^[0-9a-f]+-[0-9a-f]+ \S+ \S+ \S+ \S+\s*(.*)$/.exec(line);
    if (head) {
      name = head[1] ?? '';
      const [a, b] = line
        .split(' ')[0]!
        .split('-')
        .map((h) => Number.parseInt(h, 16));
      size = b! - a!;
      continue;
    }
    const rss = /^Rss:\s+(\d+) kB/.exec(line);
    if (!rss) continue;
    const bytes = Number(rss[1]) * 1024;
    result.rss += bytes;
    if (name.startsWith('/')) result.file += bytes;
    else if (name === '[heap]') result.heap += bytes;
    else {
      result.anon += bytes;
      if (size >= 60 * MB && size <= 64 * MB) result.arenaLike += bytes;
      result.biggestAnon.push([size, bytes]);
    }
  }
  result.biggestAnon = result.biggestAnon.sort((x, y) => y[1] - x[1]).slice(0, 8);
  return result;
}

interface ProbeReport {
  memoryUsage: NodeJS.MemoryUsage;
  heap: { total_heap_size: number; used_heap_size: number; malloced_memory: number; number_of_native_contexts: number };
  spaces: Array<{ space_name: string; space_size: number; space_used_size: number; physical_space_size: number }>;
  threads: string[];
  handles: Record<string, number>;
  fullGcMs: number[];
  scavenges: number;
  snapshot?: string;
}

let probeN = 0;
async function probe(pid: number, out: string): Promise<ProbeReport> {
  probeN += 1;
  process.kill(pid, 'SIGUSR2');
  for (let i = 0; i < 1200; i++) {
    await sleep(100);
    try {
      return JSON.parse(readFileSync(`${out}.${probeN}.json`, 'utf8')) as ProbeReport;
    } catch {
      // not written yet
    }
  }
  throw new Error('the probe did not answer');
}

function print(label: string, pid: number, s: Smaps, p: ProbeReport): void {
  const spaces = p.spaces
    .filter((x) => x.physical_space_size > 0)
    .map((x) => `${x.space_name.replace('_space', '')} ${mb(x.physical_space_size)}/${mb(x.space_used_size)}`)
    .join(', ');
  const threads: Record<string, number> = {};
  for (const name of p.threads) threads[name] = (threads[name] ?? 0) + 1;
  process.stdout.write(
    [
      `${label}: RSS ${mb(rssBytes(pid))} MB (smaps ${mb(s.rss)}: file ${mb(s.file)}, brk heap ${mb(s.heap)}, anon ${mb(s.anon)} of which 64 MB-arena-like ${mb(s.arenaLike)})`,
      `  V8 heap committed ${mb(p.memoryUsage.heapTotal)} used ${mb(p.memoryUsage.heapUsed)}, external ${mb(p.memoryUsage.external)} (ArrayBuffers ${mb(p.memoryUsage.arrayBuffers)}), V8 malloced ${mb(p.heap.malloced_memory)}, contexts ${p.heap.number_of_native_contexts}`,
      `  spaces (physical/used MB): ${spaces}`,
      `  threads ${JSON.stringify(threads)}; handles ${JSON.stringify(p.handles)}`,
      `  since the last reading: ${p.scavenges} scavenges, full collections (ms each) ${p.fullGcMs.join(', ') || 'none'}`,
      `  largest anonymous mappings (size/rss MB): ${s.biggestAnon.map(([z, r]) => `${mb(z)}/${mb(r)}`).join(', ')}`,
      ...(p.snapshot ? [`  heap snapshot ${p.snapshot}`] : []),
    ].join('\n') + '\n',
  );
}

/** The probe first (it may collect garbage), then /proc: the figures of one moment. */
async function report(label: string, pid: number, out: string): Promise<void> {
  const p = await probe(pid, out);
  print(label, pid, smaps(pid), p);
}

async function main(): Promise<void> {
  const pinning = cpuPinning();
  const calls = Number(args.calls);
  const out = join(mkdtempSync(join(tmpdir(), 'switchboard-memory-')), 'probe');
  const extraEnv = Object.fromEntries(
    args.env
      .split(',')
      .filter(Boolean)
      .map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]),
  );
  process.stdout.write(
    `${pinning.describe}; load average ${loadavg()
      .map((v) => v.toFixed(2))
      .join(' ')}\n`,
  );
  const emulators = await startEmulateProcess(benchEmulatorArgs(), pinning.load);
  const nodeArgs = [
    '--import',
    PROBE,
    ...(args.gc ? ['--expose-gc'] : []),
    ...args['node-args'].split(' ').filter(Boolean),
  ];
  const server = await startServerProcess(
    {
      SWITCHBOARD_DEEPGRAM_URL: emulators.url,
      SWITCHBOARD_OPENAI_URL: emulators.url,
      SWITCHBOARD_CARTESIA_URL: emulators.url,
      MEMORY_PROBE_OUT: out,
      ...(args.snapshot ? { MEMORY_PROBE_SNAPSHOT: '2' } : {}),
      ...(args.gc ? { MEMORY_PROBE_GC: '1' } : {}),
      ...extraEnv,
    },
    nodeArgs,
    pinning.server,
    args.root,
  );
  const pid = server.child.pid!;
  // With --env LOG_LEVEL=debug: the server's own account of each quiet-time collection.
  const quietLines: string[] = [];
  server.child.stdout!.on('data', (chunk: Buffer) => {
    for (const line of chunk.toString().split('\n')) if (line.includes('memory given back')) quietLines.push(line);
  });
  try {
    const id = await createBotConfig(server.baseUrl, talkingBotConfig(args.kind === 's2s'));
    await server.logged('voice activity model ready');
    await sleep(3000);
    await report('idle, ready for calls', pid, out);
    const wsUrl = `${server.baseUrl.replace('http://127.0.0.1', 'ws://localhost')}/ws/twilio/${id}`;
    const cpu0 = cpuSeconds(pid);
    await callers(wsUrl, calls, 60_000, 'once', pinning.load);
    const warmCpu = cpuSeconds(pid) - cpu0;
    await sleep(3000);
    await report(`after warm-up (${calls} calls, ${warmCpu.toFixed(2)} s of CPU)`, pid, out);
    const loopS = Number(args['loop-s']);
    if (loopS > 0) {
      const cpu1 = cpuSeconds(pid);
      await callers(wsUrl, calls, loopS * 1000, 'loop', pinning.load);
      const loopCpu = cpuSeconds(pid) - cpu1;
      await sleep(3000);
      await report(`after ${loopS} s of ${calls} looping calls (${loopCpu.toFixed(2)} s of CPU)`, pid, out);
    }
    await sleep(15_000);
    await report('15 s later', pid, out);
  } finally {
    await server.stop();
    await emulators.stop();
  }
  process.stdout.write(
    `load average ${loadavg()
      .map((v) => v.toFixed(2))
      .join(' ')}\n`,
  );
}

main().catch((err: unknown) => {
  process.stderr.write(`bench/memory failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exitCode = 1;
});
