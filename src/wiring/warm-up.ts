import type { FastifyInstance } from 'fastify';
import type { Logger } from '../observability/logger.js';
import type { BotConfigsRepo } from '../store/bot-configs-repo.js';

/** Requests that never lead to a call: health checks, metrics scrapes, the API's documentation. */
const MONITORING_PATH = /^\/(healthz|metrics|openapi\.json|docs)(?:[/?]|$)/;

/**
 * What calls need (the VAD model, the offline voice) loads in the background once calls may come:
 * now if a configuration is stored, else on the first request that is not monitoring.
 */
export async function warmCallPartsWhenNeeded(
  app: FastifyInstance,
  /** Readies the call parts in the background (the runtime's `warm`). */
  warmUp: ((log: Logger) => void) | undefined,
  botConfigs: BotConfigsRepo,
  log: Logger,
): Promise<void> {
  const warm = () => warmUp?.(log);
  if (await botConfigs.hasAny()) {
    warm();
    return;
  }
  app.addHook('onRequest', async (request) => {
    if (!MONITORING_PATH.test(request.url)) warm();
  });
}
