import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../src/app.js';
import { loadConfig } from '../../src/config/env.js';
import type { LiveCalls } from '../../src/lifecycle/live-calls.js';
import { createLogger } from '../../src/observability/logger.js';
import type { ProviderRegistry } from '../../src/providers/registry.js';
import { builtinRegistry, defaultRuntime } from '../../src/runtime.js';
import { type OpenedDatabase, openDatabase } from '../../src/store/database.js';
import type { Clock } from '../../src/shared/clock.js';
import { simulatedCallee } from '../../src/tools/simulator/sandbox-callee.js';
import { onFreePort } from './free-port.js';
import { TEST_KEY, removeDir, sampleConfig, tempDataDir } from './test-data.js';
import { testStoreEnv } from './test-store.js';

export interface CallServer {
  app: FastifyInstance;
  /** http://127.0.0.1:port */
  baseUrl: string;
  registry: ProviderRegistry;
  /** The server's data dir (its keys live there). */
  dataDir: string;
  /** The server's log records at info and above, parsed, when `captureLogs` was asked for. */
  logs: Array<Record<string, unknown> & { msg?: string }>;
  /** Resolves with the first log record `match` accepts (earlier or later); rejects after `timeoutMs`. */
  waitForLog(
    match: (record: Record<string, unknown> & { msg?: string }) => boolean,
    timeoutMs?: number,
  ): Promise<Record<string, unknown>>;
  /** Creates a telephony configuration and returns its id and wssUrl. */
  createConfig(overrides?: Record<string, unknown>): Promise<{ id: string; wssUrl: string }>;
  close(): Promise<void>;
}

/**
 * A real listening server (real sockets, real Silero VAD) whose registry also holds the test's
 * scripted providers, registered by the caller before the first call.
 */
export async function startCallServer(
  register: (registry: ProviderRegistry) => void,
  env: Record<string, string> = {},
  /**
   * `publicHost`: the host name of the public URL (the answers' room and socket URLs); 127.0.0.1 by default.
   * `clock`: the time calls run on (shared/clock.ts); a scaled one needs the far end (simulator, room client) on it too.
   */
  options: { captureLogs?: boolean; liveCalls?: LiveCalls; publicHost?: string; clock?: Clock } = {},
): Promise<CallServer> {
  const dataDir = tempDataDir();
  const database: OpenedDatabase = await openDatabase(dataDir, (await testStoreEnv(dataDir)).DATABASE_URL);
  const registry = builtinRegistry();
  register(registry);
  const logs: CallServer['logs'] = [];
  const logger = options.captureLogs
    ? createLogger('info', { write: (line: string) => void logs.push(JSON.parse(line) as CallServer['logs'][number]) })
    : createLogger(process.env.TEST_LOG_LEVEL ?? 'silent');
  // A known port, so the TwiML's stream URLs (built from the public URL) reach this server.
  const { app, baseUrl } = await onFreePort(async (port) => {
    const config = loadConfig({
      SWITCHBOARD_DATA_DIR: dataDir,
      SWITCHBOARD_API_KEY: TEST_KEY,
      LOG_LEVEL: 'silent',
      PORT: String(port),
      SWITCHBOARD_PUBLIC_URL: `http://${options.publicHost ?? '127.0.0.1'}:${port}`,
      ...env,
    });
    // The sandbox carrier's callee, as `switchboard serve` plugs it in.
    const built = await buildApp({
      config,
      database,
      logger,
      runtime: defaultRuntime(registry, options.clock),
      liveCalls: options.liveCalls,
      sandboxCallee: simulatedCallee,
    });
    try {
      return { app: built, baseUrl: await built.listen({ port, host: '127.0.0.1' }) };
    } catch (error) {
      await built.close();
      throw error;
    }
  });
  return {
    app,
    baseUrl,
    registry,
    dataDir,
    logs,
    async waitForLog(match, timeoutMs = 30_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const found = logs.find(match);
        if (found) return found;
        if (Date.now() > deadline)
          throw new Error(
            `no matching log record within ${timeoutMs} ms; last: ${logs
              .slice(-5)
              .map((r) => r.msg)
              .join(' | ')}`,
          );
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    },
    async createConfig(overrides = {}) {
      const res = await app.inject({
        method: 'POST',
        url: '/v1/bots/twilio-config',
        headers: { authorization: `Bearer ${TEST_KEY}` },
        payload: sampleConfig(overrides),
      });
      if (res.statusCode !== 200) throw new Error(`config rejected: ${res.body}`);
      const view = res.json() as { id: string };
      // The server listens on a random port; the stored wssUrl names the public URL, so derive it.
      return { id: view.id, wssUrl: `${baseUrl.replace(/^http/, 'ws')}/ws/twilio/${view.id}` };
    },
    async close() {
      await app.close();
      await database.close();
      removeDir(dataDir);
    },
  };
}
