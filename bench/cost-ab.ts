import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { type CapacityPoint, measureCapacity, startEmulateProcess } from './capacity.js';
import { BENCH_REPLY } from './latency.js';
import { createBotConfig, scrapeMetrics, type ServerProcess, startServerProcess } from './server-process.js';

/**
 * CPU per talking call of two builds side by side, in the same window: the machine this runs on is
 * shared, so figures taken minutes apart differ by more than most changes do; two servers under the
 * same load at the same time see the same noise. CPU is each server process's CPU time (all its
 * threads) over the steady window, divided by its calls.
 *
 *   npx tsx bench/cost-ab.ts --base ../other-checkout --calls 50 --duration-s 30 [--rounds 2]
 *
 * `--base` is a checkout with a build (dist/) to compare with this one's.
 */

const { values: args } = parseArgs({
  options: {
    base: { type: 'string' },
    calls: { type: 'string', default: '50' },
    'duration-s': { type: 'string', default: '30' },
    rounds: { type: 'string', default: '1' },
  },
});
const FIXTURES = fileURLToPath(new URL('../fixtures/audio', import.meta.url));
const HERE = fileURLToPath(new URL('..', import.meta.url));

async function start(
  root: string,
  vendors: string,
): Promise<{ server: ServerProcess; wssUrl: string; idleRssBytes: number }> {
  const server = await startServerProcess(
    { SWITCHBOARD_DEEPGRAM_URL: vendors, SWITCHBOARD_OPENAI_URL: vendors, SWITCHBOARD_CARTESIA_URL: vendors },
    [],
    undefined,
    root,
  );
  const id = await createBotConfig(server.baseUrl, {
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
  await server.logged('voice activity model ready');
  const idleRssBytes = (await scrapeMetrics(server.baseUrl)).get('process_resident_memory_bytes') ?? 0;
  return { server, wssUrl: `${server.baseUrl.replace(/^http/, 'ws')}/ws/twilio/${id}`, idleRssBytes };
}

async function main(): Promise<void> {
  if (!args.base) throw new Error('--base <checkout with dist/> is required');
  const emulators = await startEmulateProcess([
    '--stt-final-delay-ms',
    '150',
    '--llm-first-token-ms',
    '200',
    '--llm-tokens-per-sec',
    '50',
    '--tts-first-byte-ms',
    '100',
    '--tts-real-time-factor',
    '2',
    '--transcript',
    'do you have a table',
    '--reply',
    BENCH_REPLY,
  ]);
  const builds = { base: args.base, this: HERE };
  const calls = Number(args.calls);
  const durationMs = Number(args['duration-s']) * 1000;
  try {
    for (let round = 1; round <= Number(args.rounds); round++) {
      const running = await Promise.all(Object.values(builds).map((root) => start(root, emulators.url)));
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
          process.stdout.write(
            `round ${round} ${name.padEnd(4)}: CPU ${p.cpuPerCallPct}% of a core per call, ${p.memoryPerCallMb} MB per call, event loop p99 ${p.eventLoopP99Ms} ms, late ticks ${p.lateTicks}/${p.ticks}, failed ${p.failedCalls} ${JSON.stringify(p.outcomes)}, reply p50 ${p.replyLatencyP50Ms} ms\n`,
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
