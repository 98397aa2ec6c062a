import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../src/app.js';
import { type AppConfig, loadConfig } from '../../src/config/env.js';
import { createLogger } from '../../src/observability/logger.js';
import { type ServiceKeys, loadServiceKeys } from '../../src/security/service-keys.js';
import { AccountsRepo } from '../../src/store/accounts-repo.js';
import { type OpenedDatabase, openDatabase } from '../../src/store/database.js';
import { TEST_KEY, tempDataDir } from './test-data.js';
import { TEST_STORE, type TestStore, testStoreEnv } from './test-store.js';

export interface TestApp {
  app: FastifyInstance;
  config: AppConfig;
  database: OpenedDatabase;
  dataDir: string;
  /** The keys the app signs and seals with (from the store or the data dir). */
  keys: ServiceKeys;
  /** A stored key for another account, to check isolation. */
  createKey(account: string): Promise<string>;
  close(): Promise<void>;
}

/**
 * A fully wired app on a fresh (or given) data dir, and the test run's store (test-store.ts)
 * unless `env` names a DATABASE_URL or `store` says otherwise; nothing listens until the test asks.
 */
export async function createTestApp(
  env: Record<string, string> = {},
  dataDir = tempDataDir(),
  store: TestStore = TEST_STORE,
): Promise<TestApp> {
  const storeEnv = store === 'postgres' && !env.DATABASE_URL ? await testStoreEnv(dataDir) : {};
  const config = loadConfig({
    SWITCHBOARD_DATA_DIR: dataDir,
    SWITCHBOARD_API_KEY: TEST_KEY,
    LOG_LEVEL: 'silent',
    ...storeEnv,
    ...env,
  });
  const database = await openDatabase(dataDir, config.databaseUrl);
  if (database.engine !== store) throw new Error(`the test asked for ${store}, but the app opened ${database.engine}`);
  const app = await buildApp({ config, database, logger: createLogger('silent') });
  return {
    app,
    config,
    database,
    dataDir,
    keys: await loadServiceKeys(config, database),
    createKey: async (account) => (await new AccountsRepo(database.db).createKey(account)).key,
    close: async () => {
      await app.close();
      await database.close();
    },
  };
}
