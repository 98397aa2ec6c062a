import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { type PinlessConfigService, domainConfigBody } from '../dialin/pinless-config.js';
import { named } from './openapi.js';
import { domainView } from './response-schemas.js';

/** Endpoint 9: the account's domain properties (pinless dial-in), at the base address of /v1. */
export async function domainRoutes(instance: FastifyInstance, opts: { service: PinlessConfigService }): Promise<void> {
  const app = instance.withTypeProvider<ZodTypeProvider>();
  const domain = named(app, 'Domain', domainView);

  app.get(
    '/',
    { schema: { summary: 'The account domain and its pinless dial-in entries', response: { 200: domain } } },
    async (request) => opts.service.get(request.account),
  );

  app.post(
    '/',
    {
      schema: {
        summary: 'Replace the pinless dial-in entries (not a merge)',
        description:
          'Each room_creation_api gets a signed test POST {To, test: true}; calls to the numbers POST {From, To, callId, callDomain} there.',
        body: named(app, 'DomainConfigRequest', domainConfigBody),
        response: { 200: domain },
      },
    },
    async (request) => opts.service.set(request.account, request.body),
  );
}
