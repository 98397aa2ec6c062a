import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { telephonyConfigBody } from '../bots/bot-config-schema.js';
import type { BotConfigService } from '../bots/bot-config-service.js';
import type { AppConfig } from '../config/env.js';
import type { DialoutService } from '../dialout/dialout-service.js';
import type { ProviderRegistry } from '../providers/registry.js';
import { pageQuery } from '../store/paging.js';
import { errorResponses } from './error-responses.js';
import { named } from './openapi.js';
import { assertProvidersSetUp, assertWebhookToolUrls, withKnownProviders } from './provider-checks.js';
import type { AddressPolicy } from '../security/address-policy.js';
import { deletedConfig, storedTelephonyConfig } from './response-schemas.js';

const idParams = z.object({ id: z.string().min(1).max(128) });

/** Endpoints 2–5 of the spec, plus DELETE. Mounted under /v1 behind the API-key check. */
export async function botConfigRoutes(
  instance: FastifyInstance,
  opts: {
    service: BotConfigService;
    registry: ProviderRegistry;
    env: AppConfig['env'];
    dialout: DialoutService;
    /** Where webhook_tools URLs may point. */
    webhookPolicy: AddressPolicy;
  },
): Promise<void> {
  const app = instance.withTypeProvider<ZodTypeProvider>();
  const { service, registry, env, dialout, webhookPolicy } = opts;
  const body = named(app, 'TelephonyConfigRequest', withKnownProviders(telephonyConfigBody, registry));
  const stored = named(app, 'StoredTelephonyConfig', storedTelephonyConfig);

  /** Checks beyond the body's shape: provider keys and options, and dial-out targets (as POST /v1/bots/start does). */
  async function checked<T extends z.output<typeof telephonyConfigBody>>(config: T, accountId: string): Promise<T> {
    assertProvidersSetUp(config, registry, env);
    assertWebhookToolUrls(config, webhookPolicy);
    // The configuration's caller is in the room too.
    if ((config.dialout_settings ?? []).length > 0) await dialout.plan(accountId, config.dialout_settings ?? [], 1);
    return config;
  }

  app.post(
    '/bots/twilio-config',
    { schema: { summary: 'Create a telephony bot configuration', body, response: { 200: stored } } },
    async (request) => service.create(request.account, await checked(request.body, request.account.id)),
  );

  app.post(
    '/bots/twilio-config/:id',
    {
      schema: {
        summary: 'Replace a telephony bot configuration',
        description: 'Provider keys sent back exactly as masked on read keep their stored value.',
        params: idParams,
        body,
        response: { 200: stored, ...errorResponses('not-found') },
      },
    },
    async (request) =>
      service.replace(request.account, request.params.id, await checked(request.body, request.account.id)),
  );

  app.get(
    '/bots/twilio-config/:id',
    {
      schema: {
        summary: 'Read a telephony bot configuration',
        params: idParams,
        response: { 200: stored, ...errorResponses('not-found') },
      },
    },
    async (request) => service.get(request.account, request.params.id),
  );

  app.get(
    '/bots/twilio-config',
    {
      schema: {
        summary: 'List telephony bot configurations, newest first',
        querystring: pageQuery,
        response: { 200: z.array(stored) },
      },
    },
    async (request) => service.list(request.account, request.query),
  );

  app.delete(
    '/bots/twilio-config/:id',
    {
      schema: {
        summary: 'Delete a telephony bot configuration',
        params: idParams,
        response: { 200: deletedConfig, ...errorResponses('not-found') },
      },
    },
    async (request) => {
      await service.delete(request.account, request.params.id);
      return { deleted: true as const, id: request.params.id };
    },
  );
}
