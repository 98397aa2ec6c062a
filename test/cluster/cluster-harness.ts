/**
 * Two (or more) `switchboard serve` processes sharing one PostgreSQL database and one Redis,
 * behind a round-robin proxy whose address is every node's public URL, with the vendors played
 * by the emulators in this process. What the cluster tests start.
 */
import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { CartesiaEmulator } from '../../src/tools/emulators/cartesia-emulator.js';
import { DeepgramEmulator } from '../../src/tools/emulators/deepgram-emulator.js';
import { type RunningEmulators, startEmulatorServer } from '../../src/tools/emulators/emulator-server.js';
import { OpenAiEmulator } from '../../src/tools/emulators/openai-emulator.js';
import { startServeProcess } from '../helpers/cli-process.js';
import { findRedis, type RedisServer, startRedis } from '../helpers/redis-server.js';
import { type RoundRobinProxy, startRoundRobinProxy } from '../helpers/round-robin-proxy.js';
import { TEST_KEY, removeDir, tempDataDir } from '../helpers/test-data.js';
import { createTestDatabase } from '../helpers/test-store.js';

export const FAST = {
  sttFinalDelayMs: 50,
  llmFirstTokenMs: 50,
  llmTokensPerSec: 200,
  ttsFirstByteMs: 30,
  ttsRealTimeFactor: 4,
};
// Short: most calls wait for the greeting to end before they go on, and the emulated voice lasts
// 60 ms a character in real time; no test is about the greeting's length.
export const GREETING = 'Harbour hotel, how can I help?';
export const ANSWER = 'We have a room with a view for you tonight.';
/**
 * The liveness window of a test that kills a node: short, so the dead node is reaped within the
 * test. Only that test shortens it: on a loaded machine a live node's heartbeat can be late by
 * more than that, and a cluster that thinks a live node dead reaps its rooms and calls, which
 * breaks every count the other tests check. They run with the server's default.
 */
export const NODE_TIMEOUT_SECS = 1.5;

export interface ClusterNode {
  child: ChildProcess;
  /** The node's own address (what the other nodes relay to). */
  baseUrl: string;
  dataDir: string;
  output: () => string;
  exited: Promise<number | null>;
}

export interface Cluster {
  proxy: RoundRobinProxy;
  nodes: ClusterNode[];
  redis: RedisServer;
  databaseUrl: string;
  emulators: RunningEmulators;
  cartesia: CartesiaEmulator;
  /** A request through the balancer, or to one node (`via`), with the test's API key. */
  api(method: string, path: string, body?: unknown, via?: string): Promise<{ status: number; body: any }>;
  close(): Promise<void>;
}

export const redisLookup = findRedis();

export async function startCluster(env: Record<string, string> = {}, nodeCount = 2): Promise<Cluster> {
  if (!redisLookup.ok) throw new Error(redisLookup.reason);
  const redis = await startRedis(redisLookup.binary);
  const databaseUrl = await createTestDatabase();
  const cartesia = new CartesiaEmulator({ latencies: FAST });
  const emulators = await startEmulatorServer([
    new DeepgramEmulator({ latencies: FAST, transcripts: ['do you have a room', 'for tonight', 'for two people'] }),
    new OpenAiEmulator({ latencies: FAST, replies: [GREETING, ANSWER] }),
    cartesia,
  ]);
  const backends: string[] = [];
  const proxy = await startRoundRobinProxy(backends);
  const nodes: ClusterNode[] = [];
  const dirs: string[] = [];
  const cluster: Cluster = {
    proxy,
    nodes,
    redis,
    databaseUrl,
    emulators,
    cartesia,
    async api(method, path, body, via = proxy.url) {
      const res = await fetch(`${via}${path}`, {
        method,
        headers: {
          authorization: `Bearer ${TEST_KEY}`,
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await res.text();
      let parsed: unknown = text;
      try {
        parsed = JSON.parse(text);
      } catch {}
      return { status: res.status, body: parsed };
    },
    async close() {
      for (const node of nodes) {
        if (node.child.exitCode === null && node.child.signalCode === null) {
          node.child.kill('SIGKILL');
          await once(node.child, 'exit');
        }
      }
      await proxy.close();
      await emulators.close();
      await redis.stop();
      for (const dir of dirs) removeDir(dir);
    },
  };
  try {
    // One at a time: the first applies the migrations and writes the shared keys.
    for (let i = 0; i < nodeCount; i += 1) {
      const dataDir = tempDataDir();
      dirs.push(dataDir);
      const served = await startServeProcess({
        SWITCHBOARD_PUBLIC_URL: proxy.url,
        SWITCHBOARD_DATA_DIR: dataDir,
        SWITCHBOARD_API_KEY: TEST_KEY,
        DATABASE_URL: databaseUrl,
        REDIS_URL: redis.url,
        SWITCHBOARD_DEEPGRAM_URL: emulators.url,
        SWITCHBOARD_OPENAI_URL: emulators.url,
        SWITCHBOARD_CARTESIA_URL: emulators.url,
        ...env,
      });
      const exited = once(served.child, 'exit').then(([code]) => code as number | null);
      nodes.push({ child: served.child, baseUrl: served.baseUrl, dataDir, output: served.output, exited });
      backends.push(served.baseUrl);
    }
  } catch (err) {
    await cluster.close();
    throw err;
  }
  return cluster;
}

/** The node that holds the most recent thing the cluster view counts, by polling GET /cluster until `match` holds. */
export async function clusterView(via: string): Promise<{
  node_id: string;
  nodes: Array<{ node_id: string; url: string; draining: boolean; live_calls: number; rooms: number }>;
}> {
  const res = await fetch(`${via}/cluster`);
  return (await res.json()) as never;
}

/** Polls `probe` until it returns true (every 100 ms). */
export async function until(probe: () => Promise<boolean> | boolean): Promise<void> {
  while (!(await probe())) await new Promise((resolve) => setTimeout(resolve, 100));
}
