import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { telephonyConfigBody } from '../bots/bot-config-schema.js';
import type { BotConfigService } from '../bots/bot-config-service.js';
import { pageQuery } from '../store/paging.js';
import { validationError } from './errors.js';

const idParams = z.object({ id: z.string().min(1).max(128) });

/** Endpoints 2–5 of the spec, plus DELETE. Mounted under /v1 behind the API-key check. */
export async function botConfigRoutes(app: FastifyInstance, opts: { service: BotConfigService }): Promise<void> {
  const { service } = opts;

  app.post('/bots/twilio-config', async (request) => {
    const body = telephonyConfigBody.safeParse(request.body ?? undefined);
    if (!body.success) throw validationError(body.error);
    return service.create(request.account, body.data);
  });

  app.post('/bots/twilio-config/:id', async (request) => {
    const { id } = idParams.parse(request.params);
    const body = telephonyConfigBody.safeParse(request.body ?? undefined);
    if (!body.success) throw validationError(body.error);
    return service.replace(request.account, id, body.data);
  });

  app.get('/bots/twilio-config/:id', async (request) => {
    const { id } = idParams.parse(request.params);
    return service.get(request.account, id);
  });

  app.get('/bots/twilio-config', async (request) => {
    const query = pageQuery.safeParse(request.query);
    if (!query.success) throw validationError(query.error, 'query');
    return service.list(request.account, query.data);
  });

  app.delete('/bots/twilio-config/:id', async (request) => {
    const { id } = idParams.parse(request.params);
    await service.delete(request.account, id);
    return { deleted: true, id };
  });
}
