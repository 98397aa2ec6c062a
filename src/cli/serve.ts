import type { AppConfig } from '../config/env.js';
import { createLogger } from '../observability/logger.js';
import { startServer } from '../server.js';

const SIGNALS = ['SIGINT', 'SIGTERM'] as const;

/**
 * Runs until SIGINT or SIGTERM, then drains: new calls are refused, live calls go on for up to
 * SWITCHBOARD_DRAIN_TIMEOUT_SECS and then hear the bot's goodbye; the server closes (recordings
 * finished, store closed) as soon as the last call has ended. A second signal skips the wait:
 * the calls still live are closed at once.
 */
export async function runServe(config: AppConfig): Promise<number> {
  const logger = createLogger(config.logLevel);
  // The sandbox's callee is the phone simulator, a development tool: loaded only when the sandbox
  // carrier is in use, so the server's own modules never import the tools.
  const sandboxCallee =
    config.carrier === 'sandbox' ? (await import('../tools/simulator/sandbox-callee.js')).simulatedCallee : undefined;
  const server = await startServer(config, { logger, sandboxCallee });
  let signals = 0;
  let onSignal: (signal: string) => void = () => undefined;
  await new Promise<void>((resolve) => {
    const closeServer = () =>
      server.close().then(resolve, (err: unknown) => {
        logger.error({ err }, 'shutdown failed');
        resolve();
      });
    onSignal = (signal: string) => {
      signals += 1;
      if (signals === 1) {
        logger.info({ signal }, 'shutting down');
        server.drain().then(closeServer, (err: unknown) => {
          logger.error({ err }, 'drain failed');
          closeServer();
        });
      } else {
        logger.info({ signal }, 'second signal: closing the live calls now');
        closeServer();
      }
    };
    for (const signal of SIGNALS) process.on(signal, onSignal);
  });
  // Signals from here on get their default effect, should anything keep the process alive.
  for (const signal of SIGNALS) process.off(signal, onSignal);
  logger.info('switchboard stopped');
  return 0;
}
