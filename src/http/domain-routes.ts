import type { FastifyInstance } from 'fastify';
import { type PinlessConfigService, domainConfigBody } from '../dialin/pinless-config.js';
import { validationError } from '../shared/api-error.js';

/** Endpoint 9: the account's domain properties (pinless dial-in), at the base address of /v1. */
export async function domainRoutes(app: FastifyInstance, opts: { service: PinlessConfigService }): Promise<void> {
  app.get('/', async (request) => opts.service.get(request.account));

  app.post('/', async (request) => {
    const body = domainConfigBody.safeParse(request.body ?? undefined);
    if (!body.success) throw validationError(body.error);
    return opts.service.set(request.account, body.data);
  });
}
