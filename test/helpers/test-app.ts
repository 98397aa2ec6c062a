import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../src/app.js';
import { type AppConfig, loadConfig } from '../../src/config/env.js';
import { createLogger } from '../../src/observability/logger.js';
import { SecretBox } from '../../src/security/secret-box.js';
import { AccountsRepo } from '../../src/store/accounts-repo.js';
import { type OpenedDatabase, openDatabase } from '../../src/store/database.js';

export const TEST_KEY = 'sb_test_default_account_key_0001';

export function tempDataDir(): string {
  return mkdtempSync(join(tmpdir(), 'switchboard-test-'));
}

export interface TestApp {
  app: FastifyInstance;
  config: AppConfig;
  database: OpenedDatabase;
  dataDir: string;
  /** A stored key for another account, to check isolation. */
  createKey(account: string): Promise<string>;
  close(): Promise<void>;
}

/** A fully wired app on a fresh (or given) data dir; nothing listens until the test asks. */
export async function createTestApp(env: Record<string, string> = {}, dataDir = tempDataDir()): Promise<TestApp> {
  const config = loadConfig({ SWITCHBOARD_DATA_DIR: dataDir, SWITCHBOARD_API_KEY: TEST_KEY, LOG_LEVEL: 'silent', ...env });
  const database = await openDatabase(dataDir);
  const app = await buildApp({ config, database, secrets: SecretBox.forDataDir(dataDir), logger: createLogger('silent') });
  return {
    app,
    config,
    database,
    dataDir,
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
    api_keys: { openai: 'sk-test-openai-0123456789', deepgram: 'dg-test-key-abcdefgh', cartesia: 'sk_car_test_0123456789' },
    ...overrides,
  };
}
