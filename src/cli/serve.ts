import type { AppConfig } from '../config/env.js';
import { createLogger } from '../observability/logger.js';
import { startServer } from '../server.js';

/** Runs until SIGINT/SIGTERM, then closes the server (letting calls end) and the store. */
export async function runServe(config: AppConfig): Promise<number> {
  const logger = createLogger(config.logLevel);
  const server = await startServer(config, { logger });
  await new Promise<void>((resolve) => {
    const stop = (signal: string) => {
      logger.info({ signal }, 'shutting down');
      server.close().then(resolve, (err: unknown) => {
        logger.error({ err }, 'shutdown failed');
        resolve();
      });
    };
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
  return 0;
}
