/**
 * Which store the tests run on. The same test files run twice (vitest.config.ts): on SQLite in
 * the `default` project, on PostgreSQL in the `postgres` one, which sets SWITCHBOARD_TEST_STORE.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { inject } from 'vitest';

export type TestStore = 'sqlite' | 'postgres';

export const TEST_STORE: TestStore = process.env.SWITCHBOARD_TEST_STORE === 'postgres' ? 'postgres' : 'sqlite';

/** A new, empty database in the run's PostgreSQL cluster; its URL. */
export async function createTestDatabase(): Promise<string> {
  const adminUrl = inject('postgresAdminUrl');
  if (!adminUrl) throw new Error('no PostgreSQL cluster in this test project (run it in the postgres project)');
  const name = `switchboard_${randomBytes(6).toString('hex')}`;
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    await client.query(`create database ${name}`);
  } finally {
    await client.end();
  }
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

const databases = new Map<string, Promise<string>>();

/**
 * The environment that puts a server on the test store of a data dir: nothing on SQLite (the
 * store is in the data dir), a PostgreSQL database of the data dir's own otherwise, the same one
 * each time, so "the same data dir" still means "the same store" across restarts.
 */
export async function testStoreEnv(dataDir: string): Promise<Record<string, string>> {
  if (TEST_STORE === 'sqlite') return {};
  let url = databases.get(dataDir);
  if (!url) {
    url = createTestDatabase();
    databases.set(dataDir, url);
  }
  return { DATABASE_URL: await url };
}
