import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { type CapacityPoint, measureCapacity, startEmulateProcess } from './capacity.js';
import { benchEmulatorArgs } from './latency.js';
import { type ServerProcess, startServerProcess } from './server-process.js';
import { configureTalkingBot, settledRssBytes, talkingBotVendors } from './talking-bot.js';

/**
 * CPU per talking call of two servers side by side, in the same window: the machine this runs on is
 * shared, so figures taken minutes apart differ by more than most changes do; two servers under the
 * same load at the same time see the same noise. CPU is each server process's CPU time (all its
 * threads) over the steady window, divided by its calls.
 *
 *   npx tsx bench/cost-ab.ts --base ../other-checkout --calls 50 --duration-s 30 [--rounds 2]
 *   npx tsx bench/cost-ab.ts --node-args=--max-semi-space-size=2
 *   npx tsx bench/cost-ab.ts --base ../other-checkout --s2s   (the speech-to-speech profile)
 *
 * `--base` is a checkout with a build (dist/) to compare with this one's (default: this one);
 * `--base-node-args` and `--node-args` are options for node itself on each side (space-separated,
 * default none), to compare runtime settings on one build.
 */

const { values: args } = parseArgs({
  options: {
    base: { type: 'string' },
    'base-node-args': { type: 'string', default: '' },
    'node-args': { type: 'string', default: '' },
    calls: { type: 'string', default: '50' },
    'duration-s': { type: 'string', default: '30' },
    rounds: { type: 'string', default: '1' },
    s2s: { type: 'boolean', default: false },
  },
});
const FIXTURES = fileURLToPath(new URL('../fixtures/audio', import.meta.url));
const HERE = fileURLToPath(new URL('..', import.meta.url));

interface Side {
  root: string;
  nodeArgs: string[];
}

async function start(
  side: Side,
  vendors: string,
): Promise<{ server: ServerProcess; wssUrl: string; idleRssBytes: number; unconfiguredRssBytes: number }> {
  const server = await startServerProcess(talkingBotVendors(vendors), side.nodeArgs, undefined, side.root);
  // Idle with nothing configured, as bench/run.ts reads it: the heavy parts are not loaded yet.
  const unconfiguredRssBytes = await settledRssBytes(server.baseUrl, 3000);
  const wssUrl = await configureTalkingBot(server, args.s2s);
  return { server, wssUrl, idleRssBytes: await settledRssBytes(server.baseUrl, 0), unconfiguredRssBytes };
}

async function main(): Promise<void> {
  const words = (flags: string) => flags.split(' ').filter((w) => w !== '');
  const builds: Record<string, Side> = {
    base: { root: args.base ?? HERE, nodeArgs: words(args['base-node-args']) },
    this: { root: HERE, nodeArgs: words(args['node-args']) },
  };
  if (builds.base!.root === HERE && builds.base!.nodeArgs.join(' ') === builds.this!.nodeArgs.join(' ')) {
    throw new Error('nothing to compare: give --base <checkout with dist/>, or node options that differ');
  }
  for (const [name, side] of Object.entries(builds)) {
    process.stdout.write(`${name}: ${side.root} node ${side.nodeArgs.join(' ')}\n`);
  }
  const emulators = await startEmulateProcess(benchEmulatorArgs());
  const calls = Number(args.calls);
  const durationMs = Number(args['duration-s']) * 1000;
  try {
    for (let round = 1; round <= Number(args.rounds); round++) {
      const running = await Promise.all(Object.values(builds).map((side) => start(side, emulators.url)));
      try {
        const points: CapacityPoint[] = await Promise.all(
          running.map(({ server, wssUrl, idleRssBytes }) =>
            measureCapacity({
              baseUrl: server.baseUrl,
              wssUrl,
              calls,
              durationMs,
              warmUpMs: 8000,
              fixturesDir: FIXTURES,
              idleRssBytes,
            }),
          ),
        );
        Object.keys(builds).forEach((name, i) => {
          const p = points[i]!;
          const mb = (bytes: number) => Math.round(bytes / 2 ** 20);
          process.stdout.write(
            `round ${round} ${name.padEnd(4)}: CPU ${p.cpuPerCallPct}% of a core per call, GC ${p.gcPct}% of a core (${p.minorGcs} scavenges), RSS idle ${mb(running[i]!.unconfiguredRssBytes)} MB, ready ${mb(running[i]!.idleRssBytes)} MB, ${p.memoryPerCallMb} MB per call, event loop p99 ${p.eventLoopP99Ms} ms, late ticks ${p.lateTicks}/${p.ticks}, failed ${p.failedCalls} ${JSON.stringify(p.outcomes)}, reply p50 ${p.replyLatencyP50Ms} ms\n`,
          );
        });
      } finally {
        await Promise.all(running.map(({ server }) => server.stop()));
      }
    }
  } finally {
    await emulators.stop();
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`cost-ab failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exitCode = 1;
});
