import type { Plugin } from 'vite';
import { defineConfig } from 'vitest/config';
import LongestFirstSequencer from './test/helpers/longest-first-sequencer.js';
import { findPostgres } from './test/helpers/postgres-server.js';
import { findRedis } from './test/helpers/redis-server.js';

/**
 * Store tests run twice: on the embedded SQLite store (the `default` and `processes` projects,
 * with everything else) and on a real PostgreSQL (the `postgres` project, one throwaway cluster
 * per run). Tests only about PostgreSQL live in test/postgres. Without PostgreSQL binaries the
 * `postgres` project is left out, and the run says so.
 */
const STORE_TESTS = [
  'test/integration/bot-configs-api.test.ts',
  'test/integration/phone-numbers.test.ts',
  'test/integration/pinless-config.test.ts',
  'test/integration/recordings-api.test.ts',
  'test/integration/cli-keys.test.ts',
  'test/integration/persistence.test.ts',
  'test/integration/store-repositories.test.ts',
  // Not call-records.test.ts: a whole call measured against its recording is a call test, which
  // must not share the cores with the process tests this project runs beside; the records'
  // PostgreSQL side is covered by the API and crash tests.
  'test/integration/call-records-api.test.ts',
  'test/integration/call-records-crash.test.ts',
  'test/postgres/**/*.test.ts',
];

/** Compiles dist/ once per run for the projects whose tests start the built CLI. */
const BUILD = 'test/helpers/built-cli.ts';

/**
 * Tests that start processes of their own (the built CLI, servers, Chromium, load-test
 * workers) spend CPU, where call tests spend real time that must stay real time: a call's audio is
 * paced at 20 ms a frame and barge-in is measured in tens of ms. They run as a second group, after
 * the calls, so the two never compete for a small machine's cores.
 */
const PROCESS_TESTS = [
  'test/browser/*.test.ts',
  'test/integration/file-modes.test.ts',
  'test/integration/loadtest.test.ts',
  'test/integration/node-lts.test.ts',
  'test/integration/readme-walkthroughs.test.ts',
  'test/integration/readme-dial-walkthroughs.test.ts',
  'test/integration/call-records-crash.test.ts',
  'test/integration/shutdown-drain.test.ts',
];

/**
 * Process tests whose checks are on audio played in real time through a browser: the WebRTC
 * session's continuity through a lossy, jittery link is heard in Chromium's own jitter buffer, so
 * a starved server or browser shows as a gap: run beside four other process files, the lossy-link
 * test twice heard 16 and 29 quiet blocks in the reply's first second, where it allows 5.
 * `npm test` runs them last, one file at a time, with nothing else running (docs/testing.md).
 */
const ALONE_TESTS = ['test/browser/pipecat-webrtc.test.ts'];

/**
 * Process tests that place no call (the CLI's commands, the build, the store across restarts):
 * nothing in them is paced in real time or timed in milliseconds, so `npm test` runs them at the
 * lowest priority beside the call group, in the CPU its calls leave idle, as it does the type check
 * (docs/testing.md). Their own timeouts are tens of seconds.
 */
const CALL_FREE_PROCESS_TESTS = [
  'src/security/service-keys.test.ts',
  'test/integration/cli-db.test.ts',
  'test/integration/cli-keys.test.ts',
  'test/integration/cli-usage.test.ts',
  'test/integration/dist-build.test.ts',
  'test/integration/launcher.test.ts',
  'test/integration/persistence.test.ts',
  'test/integration/recordings-api.test.ts',
];

/**
 * Files that load onnxruntime-node in their own process (the Silero network checked against it).
 * Its native addon aborts the whole process when a worker thread that loaded it is torn down
 * ("terminate called after throwing an instance of 'Napi::Error'", seen once when vitest ended an
 * idle thread), so these run in child processes of their own, apart from the call group's threads.
 */
const ONNXRUNTIME_TESTS = ['src/vad/silero.test.ts', 'src/vad/silero-network.test.ts'];

const postgres = findPostgres();
if (!postgres.ok) console.warn(`\n[postgres] skipped: ${postgres.reason}; the store tests run on SQLite only\n`);
const redis = findRedis();
if (postgres.ok && !redis.ok) console.warn(`\n[cluster] skipped: ${redis.reason}; the several-node tests need Redis\n`);

/**
 * Keeps every worker thread of a run alive until its end (as many at least as at most, whatever
 * `--maxWorkers` says): vitest otherwise ends idle threads mid-run, and tinypool reports each
 * ending as an unhandled rejection ("Terminating worker thread") that fails a run whose tests all
 * passed. Only the threads pool: the forks pool starts its minimum at once, and its files end
 * their process by design.
 */
const keepThreadsUp: Plugin = {
  name: 'switchboard:keep-threads-up',
  configureVitest({ vitest }) {
    const pools = vitest.config.poolOptions ?? {};
    vitest.config.poolOptions = { ...pools, threads: { ...pools.threads, minThreads: vitest.config.maxWorkers } };
  },
};

export default defineConfig({
  plugins: [keepThreadsUp],
  test: {
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // Tests that start processes, PostgreSQL and Redis run in forks, one fresh process per file:
    // they set the process's umask, env and signal handlers. The call group overrides this (below).
    pool: 'forks',
    // Most files are whole calls that spend their time waiting for audio played in real time,
    // not on the CPU, so several run at once even on two cores (vitest's default is one fewer
    // than the cores: one at a time there). Each file has its own servers on free ports, data
    // dirs and env; `--maxWorkers` overrides. `npm test` runs the call group (`default` and
    // `onnxruntime`) with eight (it waits more than it computes), the process tests without calls
    // beside it with two, then the rest with five: one pool size serves every project of a run
    // (docs/testing.md).
    maxWorkers: 4,
    // Only the call group runs in threads, and there each thread runs file after file with the
    // modules it already loaded: a fresh process per file spent about 0.4 s of CPU starting and
    // loading the same modules again (over a hundred files: a third of the group's CPU,
    // docs/testing.md). Every file makes its own servers, ports, data dirs and vendors, and none
    // changes the process (umask, cwd, signals): those are the process tests', in forks. (Vitest
    // sizes and isolates each pool from this root config, not from a project's.)
    poolOptions: { threads: { isolate: false } },
    // Each group's longest files first, so no long file runs alone at the end of its group.
    sequence: { sequencer: LongestFirstSequencer },
    projects: [
      {
        extends: true,
        test: {
          name: 'default',
          include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
          exclude: [
            'test/postgres/**',
            'test/cluster/**',
            '**/node_modules/**',
            ...PROCESS_TESTS,
            ...CALL_FREE_PROCESS_TESTS,
            ...ONNXRUNTIME_TESTS,
          ],
          // Worker threads that run file after file with the modules they already loaded (the
          // threads pool's `isolate: false`, above).
          pool: 'threads',
        },
      },
      {
        extends: true,
        test: { name: 'onnxruntime', include: ONNXRUNTIME_TESTS },
      },
      {
        extends: true,
        test: {
          name: 'processes',
          include: PROCESS_TESTS,
          exclude: ['**/node_modules/**', ...ALONE_TESTS],
          sequence: { groupOrder: 1 },
          globalSetup: [BUILD],
        },
      },
      {
        extends: true,
        test: { name: 'processes-alone', include: ALONE_TESTS, sequence: { groupOrder: 2 }, globalSetup: [BUILD] },
      },
      {
        extends: true,
        test: {
          name: 'processes-without-calls',
          include: CALL_FREE_PROCESS_TESTS,
          // `npm test` runs these at the lowest priority beside the call tests, where a CLI run
          // can wait seconds for a core: none of them times anything, so the timeouts only guard
          // against a hang (a test here once ran out of 30 s with every step passing, starved).
          testTimeout: 120_000,
          hookTimeout: 120_000,
          sequence: { groupOrder: 1 },
          globalSetup: [BUILD],
        },
      },
      ...(postgres.ok
        ? [
            {
              extends: true as const,
              test: {
                name: 'postgres',
                include: STORE_TESTS,
                env: { SWITCHBOARD_TEST_STORE: 'postgres' },
                // Its CLI and multi-node tests start processes (see PROCESS_TESTS).
                sequence: { groupOrder: 1 },
                globalSetup: ['test/helpers/postgres-global-setup.ts', BUILD],
              },
            },
            // Several `switchboard serve` processes on one PostgreSQL and one Redis (test/cluster).
            {
              extends: true as const,
              test: {
                name: 'cluster',
                include: ['test/cluster/**/*.test.ts'],
                env: { SWITCHBOARD_TEST_STORE: 'postgres' },
                // Server processes, like PROCESS_TESTS.
                sequence: { groupOrder: 1 },
                globalSetup: ['test/helpers/postgres-global-setup.ts', BUILD],
              },
            },
          ]
        : []),
    ],
  },
});
