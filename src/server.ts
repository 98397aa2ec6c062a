import type { FastifyInstance } from 'fastify';
import { buildApp } from './app.js';
import type { Coordinator } from './cluster/coordinator.js';
import { createCoordinator } from './cluster/create-coordinator.js';
import type { AppConfig } from './config/env.js';
import { LiveCalls } from './lifecycle/live-calls.js';
import { QuietMemory } from './lifecycle/quiet-memory.js';
import type { SandboxCallee } from './telephony/carrier/sandbox-call.js';
import { createLogger, type Logger } from './observability/logger.js';
import { AccountsRepo, DEFAULT_ACCOUNT_NAME } from './store/accounts-repo.js';
import { type OpenedDatabase, openDatabase } from './store/database.js';
import { dataDirId } from './store/data-dir-id.js';

export interface RunningServer {
  app: FastifyInstance;
  database: OpenedDatabase;
  /** The base URL the server actually listens on (useful with PORT=0). */
  address: string;
  /**
   * Stops taking new calls and lets the live ones finish, up to SWITCHBOARD_DRAIN_TIMEOUT_SECS,
   * after which the bots say goodbye. Resolves once no call is live; `close` comes next.
   */
  drain(): Promise<void>;
  /** Ends any call still live (1001), finishes recordings, stops listening and closes the store. */
  close(): Promise<void>;
}

/**
 * With no SWITCHBOARD_API_KEY and no stored key, the first start makes one for the default
 * account, stores only its hash and prints it once on stdout, where the operator starting the
 * server sees it.
 */
async function bootstrapApiKey(config: AppConfig, accounts: AccountsRepo, out: NodeJS.WritableStream): Promise<void> {
  if (config.envApiKeys.length > 0 || (await accounts.countActiveKeys()) > 0) return;
  const { key } = await accounts.createKey(DEFAULT_ACCOUNT_NAME, 'generated on first start');
  out.write(
    '\nSwitchboard generated an API key for the default account.\n' +
      'It is shown only this once; keep it somewhere safe:\n\n' +
      `  ${key}\n\n` +
      'Manage keys with `switchboard keys create|list|revoke`.\n\n',
  );
}

export async function startServer(
  config: AppConfig,
  options: { logger?: Logger; out?: NodeJS.WritableStream; sandboxCallee?: SandboxCallee } = {},
): Promise<RunningServer> {
  const logger = options.logger ?? createLogger(config.logLevel);
  const database = await openDatabase(config.dataDir, config.databaseUrl);
  let cluster: Coordinator | undefined;
  try {
    await bootstrapApiKey(config, new AccountsRepo(database.db), options.out ?? process.stdout);
    const liveCalls = new LiveCalls();
    const quietMemory = config.giveBackMemory ? QuietMemory.start(liveCalls, logger) : undefined;
    // Made here rather than by buildApp so that a failed start lets go of its Redis connection.
    cluster = await createCoordinator(config, dataDirId(config.dataDir), logger);
    const app = await buildApp({ config, database, logger, liveCalls, cluster, sandboxCallee: options.sandboxCallee });
    const address = await app.listen({ port: config.port, host: config.host });
    logger.info(
      {
        address,
        publicUrl: config.publicUrl,
        dataDir: config.dataDir,
        store: database.engine,
        nodeId: cluster.nodeId,
        coordination: cluster.clustered ? 'redis' : 'in-process',
      },
      'switchboard listening',
    );
    let closing: Promise<void> | undefined;
    return {
      app,
      database,
      address,
      drain: () => liveCalls.drain(config.drainTimeoutSecs * 1000, logger),
      close: () =>
        (closing ??= (async () => {
          quietMemory?.stop();
          await app.close();
          await database.close();
        })()),
    };
  } catch (err) {
    await cluster?.close();
    await database.close();
    throw err;
  }
}
