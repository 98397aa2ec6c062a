import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { findPostgres, startPostgres } from '../test/helpers/postgres-server.js';
import { findRedis, startRedis } from '../test/helpers/redis-server.js';
import { startRoundRobinProxy } from '../test/helpers/round-robin-proxy.js';
import { startEmulateProcess, startGenerator } from './capacity.js';
import { benchEmulatorArgs } from './latency.js';
import {
  BENCH_API_KEY,
  createBotConfig,
  scrapeMetrics,
  type ServerProcess,
  startServerProcess,
} from './server-process.js';

/**
 * The same load on one node and on two: `switchboard serve` processes on one PostgreSQL and one
 * Redis behind a round-robin balancer, talking calls generated in separate processes through the
 * balancer, vendors played by `switchboard emulate`. Prints, per run, each node's CPU (its
 * process_cpu_seconds_total from /metrics over the steady window, all threads, in % of one core)
 * and calls, and the callers' reply latency p50/p95 and failed calls.
 *
 *   npm run bench:cluster -- --calls 30 --duration-s 40
 *
 * Needs PostgreSQL binaries and redis-server, found as the tests find them. Nothing is pinned to a
 * core: two nodes on a small machine share its cores with the load, as one node does.
 */

const { values: args } = parseArgs({
  options: {
    calls: { type: 'string', default: '30' },
    'duration-s': { type: 'string', default: '40' },
    'warm-up-s': { type: 'string', default: '10' },
  },
});
const FIXTURES = fileURLToPath(new URL('../fixtures/audio', import.meta.url));
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface NodeFigures {
  calls: number;
  cpuPctOfCore: number;
}

interface RunFigures {
  nodes: number;
  perNode: NodeFigures[];
  totalCpuPctOfCore: number;
  replyP50Ms: number | null;
  replyP95Ms: number | null;
  replies: number;
  failedCalls: number;
  outcomes: Record<string, number>;
}

function percentile(sorted: number[], p: number): number | null {
  if (sorted.length === 0) return null;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

async function run(nodeCount: number, databaseUrl: string, redisUrl: string, vendors: string): Promise<RunFigures> {
  const backends: string[] = [];
  const proxy = await startRoundRobinProxy(backends);
  const nodes: ServerProcess[] = [];
  try {
    for (let i = 0; i < nodeCount; i++) {
      const node = await startServerProcess({
        SWITCHBOARD_PUBLIC_URL: proxy.url,
        DATABASE_URL: databaseUrl,
        REDIS_URL: redisUrl,
        SWITCHBOARD_DEEPGRAM_URL: vendors,
        SWITCHBOARD_OPENAI_URL: vendors,
        SWITCHBOARD_CARTESIA_URL: vendors,
      });
      nodes.push(node);
      backends.push(node.baseUrl);
    }
    const id = await createBotConfig(proxy.url, {
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
    });
    // Every node reads the configuration, which also makes it load its call parts (the VAD model).
    for (const node of nodes) {
      const read = await fetch(`${node.baseUrl}/v1/bots/twilio-config/${id}`, {
        headers: { authorization: `Bearer ${BENCH_API_KEY}` },
      });
      if (read.status !== 200) throw new Error(`node ${node.baseUrl} cannot read the configuration: ${read.status}`);
    }
    await Promise.all(nodes.map((node) => node.logged('voice activity model ready')));

    const calls = Number(args.calls);
    const durationMs = Number(args['duration-s']) * 1000;
    const warmUpMs = Number(args['warm-up-s']) * 1000;
    const wssUrl = `${proxy.url.replace(/^http/, 'ws')}/ws/twilio/${id}`;
    const generator = startGenerator(wssUrl, calls, durationMs, FIXTURES, undefined);
    await sleep(warmUpMs);
    const before = await Promise.all(nodes.map((node) => scrapeMetrics(node.baseUrl)));
    const startedAt = performance.now();
    await sleep(durationMs - warmUpMs - 2000);
    const after = await Promise.all(nodes.map((node) => scrapeMetrics(node.baseUrl)));
    const windowSecs = (performance.now() - startedAt) / 1000;
    const summary = await generator.result;

    const perNode = nodes.map((_, i) => ({
      // The calls this node served: the balancer's media-stream upgrades to it.
      calls: proxy.routed.filter((r) => r.index === i && r.path.startsWith('/ws/twilio/')).length,
      cpuPctOfCore: round(
        (((after[i]!.get('process_cpu_seconds_total') ?? 0) - (before[i]!.get('process_cpu_seconds_total') ?? 0)) /
          windowSecs) *
          100,
      ),
    }));
    const replies = [...summary.replyLatenciesMs].sort((a, b) => a - b);
    return {
      nodes: nodeCount,
      perNode,
      totalCpuPctOfCore: round(perNode.reduce((sum, n) => sum + n.cpuPctOfCore, 0)),
      replyP50Ms: percentile(replies, 50),
      replyP95Ms: percentile(replies, 95),
      replies: replies.length,
      failedCalls: summary.failed,
      outcomes: summary.outcomes,
    };
  } finally {
    for (const node of nodes) await node.stop();
    await proxy.close();
  }
}

function round(value: number): number {
  return Math.round(value * 10) / 10;
}

function print(figures: RunFigures): void {
  const nodes = figures.perNode
    .map((n, i) => `node ${i + 1}: ${n.calls} calls, CPU ${n.cpuPctOfCore} % of a core`)
    .join('; ');
  process.stdout.write(
    `${figures.nodes} node(s): ${nodes}; total CPU ${figures.totalCpuPctOfCore} %; ` +
      `reply latency p50 ${figures.replyP50Ms} ms, p95 ${figures.replyP95Ms} ms (${figures.replies} replies); ` +
      `failed calls ${figures.failedCalls} ${JSON.stringify(figures.outcomes)}\n`,
  );
}

async function main(): Promise<void> {
  const postgresLookup = findPostgres();
  if (!postgresLookup.ok) throw new Error(`PostgreSQL: ${postgresLookup.reason}`);
  const redisLookup = findRedis();
  if (!redisLookup.ok) throw new Error(`Redis: ${redisLookup.reason}`);
  const postgres = await startPostgres(postgresLookup.binaries);
  const redis = await startRedis(redisLookup.binary);
  const emulators = await startEmulateProcess(benchEmulatorArgs());
  try {
    process.stdout.write(
      `${args.calls} talking calls for ${args['duration-s']} s through a round-robin balancer (steady window after ${args['warm-up-s']} s); ` +
        'vendors emulated (LLM first token 200 ms, TTS first byte 100 ms)\n',
    );
    // Each run on a database of its own, so the second does not start from the first's rows.
    for (const nodeCount of [1, 2]) {
      const database = `bench_${nodeCount}_nodes`;
      await createDatabase(postgres.adminUrl, database);
      print(await run(nodeCount, postgres.adminUrl.replace(/\/postgres$/, `/${database}`), redis.url, emulators.url));
    }
  } finally {
    await emulators.stop();
    await redis.stop();
    await postgres.stop();
  }
}

async function createDatabase(adminUrl: string, name: string): Promise<void> {
  const { default: pg } = await import('pg');
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    await client.query(`CREATE DATABASE ${name}`);
  } finally {
    await client.end();
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
