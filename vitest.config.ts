import { defineConfig } from 'vitest/config';
import { findPostgres } from './test/helpers/postgres-server.js';
import { findRedis } from './test/helpers/redis-server.js';

/**
 * Store tests run twice: on the embedded SQLite store (the `default` project, with everything
 * else) and on a real PostgreSQL (the `postgres` project, one throwaway cluster per run). Tests
 * only about PostgreSQL live in test/postgres. Without PostgreSQL binaries the second project is
 * left out, and the run says so.
 */
const STORE_TESTS = [
  'test/integration/bot-configs-api.test.ts',
  'test/integration/phone-numbers.test.ts',
  'test/integration/pinless-config.test.ts',
  'test/integration/recordings-api.test.ts',
  'test/integration/cli-keys.test.ts',
  'test/integration/persistence.test.ts',
  'test/integration/store-repositories.test.ts',
  'test/postgres/**/*.test.ts',
];

const postgres = findPostgres();
if (!postgres.ok) console.warn(`\n[postgres] skipped: ${postgres.reason}; the store tests run on SQLite only\n`);
const redis = findRedis();
if (postgres.ok && !redis.ok) console.warn(`\n[cluster] skipped: ${redis.reason}; the several-node tests need Redis\n`);

export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // Integration tests open real sockets and SQLite files; forks keep native addons isolated.
    pool: 'forks',
    projects: [
      {
        extends: true,
        test: { name: 'default', include: ['src/**/*.test.ts', 'test/**/*.test.ts'], exclude: ['test/postgres/**', 'test/cluster/**', '**/node_modules/**'] },
      },
      ...(postgres.ok
        ? [
            {
              extends: true as const,
              test: {
                name: 'postgres',
                include: STORE_TESTS,
                env: { SWITCHBOARD_TEST_STORE: 'postgres' },
                globalSetup: ['test/helpers/postgres-global-setup.ts'],
              },
            },
            // Several `switchboard serve` processes on one PostgreSQL and one Redis (test/cluster).
            {
              extends: true as const,
              test: {
                name: 'cluster',
                include: ['test/cluster/**/*.test.ts'],
                env: { SWITCHBOARD_TEST_STORE: 'postgres' },
                globalSetup: ['test/helpers/postgres-global-setup.ts'],
              },
            },
          ]
        : []),
    ],
  },
});
