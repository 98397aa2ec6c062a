import type { FastifyInstance } from 'fastify';
import { z } from 'zod';

/** The one route a browser front-end calls itself (Pipecat's startBotAndConnect); the rest of the API is for servers. */
const START_BOT_PATH = '/v1/bots/start';
/** How long a browser may cache a preflight answer, seconds. */
const PREFLIGHT_MAX_AGE_SECS = 600;

/**
 * CORS for POST /v1/bots/start, for the origins in SWITCHBOARD_CORS_ORIGINS (`*` for any): the
 * preflight is answered without an API key, and every answer of the route (errors too, so the
 * page can read `info`) names the allowed origin. No cookies are involved, so none are allowed.
 * Must be registered before the /v1 routes, so its hook covers them.
 */
export function startBotCors(app: FastifyInstance, origins: readonly string[]): void {
  if (origins.length === 0) return;
  const allowed = (origin: string | undefined): string | undefined =>
    origin === undefined ? undefined : origins.includes('*') ? '*' : origins.includes(origin) ? origin : undefined;

  const schema = {
    summary: 'CORS preflight of POST /v1/bots/start (no API key)',
    security: [],
    response: { 204: z.null().describe('The allowed origin, method and headers') },
  };
  app.options(START_BOT_PATH, { schema }, async (request, reply) => {
    const origin = allowed(request.headers.origin);
    reply.header('vary', 'Origin');
    if (origin) {
      reply.header('access-control-allow-origin', origin);
      reply.header('access-control-allow-methods', 'POST');
      reply.header('access-control-allow-headers', 'authorization, content-type');
      reply.header('access-control-max-age', String(PREFLIGHT_MAX_AGE_SECS));
    }
    return reply.status(204).send();
  });

  app.addHook('onSend', async (request, reply, payload) => {
    if (request.method !== 'POST' || request.url.split('?')[0] !== START_BOT_PATH) return payload;
    const origin = allowed(request.headers.origin);
    reply.header('vary', 'Origin');
    if (origin) reply.header('access-control-allow-origin', origin);
    return payload;
  });
}
