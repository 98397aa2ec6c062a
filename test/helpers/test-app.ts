import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../src/app.js';
import { type AppConfig, loadConfig } from '../../src/config/env.js';
import { createLogger } from '../../src/observability/logger.js';
import { type ServiceKeys, loadServiceKeys } from '../../src/security/service-keys.js';
import { AccountsRepo } from '../../src/store/accounts-repo.js';
import { type OpenedDatabase, openDatabase } from '../../src/store/database.js';
import { TEST_STORE, type TestStore, testStoreEnv } from './test-store.js';

export const TEST_KEY = 'sb_test_default_account_key_0001';

export function tempDataDir(): string {
  return mkdtempSync(join(tmpdir(), 'switchboard-test-'));
}

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

export function removeDir(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
}

export const auth = (key = TEST_KEY) => ({ authorization: `Bearer ${key}` });

/** A valid telephony configuration body, with overrides. */
export function sampleConfig(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    bot_profile: 'telephony_ws_voice_2024_09',
    services: { stt: 'deepgram', llm: 'openai', tts: 'cartesia' },
    config: [
      { service: 'vad', options: [{ name: 'params', value: { stop_secs: 0.3 } }] },
      {
        service: 'llm',
        options: [
          { name: 'model', value: 'gpt-4o-mini' },
          {
            name: 'initial_messages',
            value: [{ role: 'system', content: [{ type: 'text', text: 'You are a helpful phone assistant.' }] }],
          },
          { name: 'run_on_config', value: true },
        ],
      },
      { service: 'tts', options: [{ name: 'voice', value: 'voice-1' }] },
    ],
    max_duration: 600,
    api_keys: {
      openai: 'sk-test-openai-0123456789',
      deepgram: 'dg-test-key-abcdefgh',
      cartesia: 'sk_car_test_0123456789',
    },
    ...overrides,
  };
}
