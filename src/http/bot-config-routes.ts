import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { providerNameIssues, telephonyConfigBody } from '../bots/bot-config-schema.js';
import type { BotConfigService } from '../bots/bot-config-service.js';
import type { DialoutService } from '../dialout/dialout-service.js';
import { pageQuery } from '../store/paging.js';
import type { AppConfig } from '../config/env.js';
import { providerSetupIssues } from '../pipeline/provider-settings.js';
import type { ProviderRegistry } from '../providers/registry.js';
import { ApiError, describeZodError, validationError } from './errors.js';

const idParams = z.object({ id: z.string().min(1).max(128) });

/** Endpoints 2–5 of the spec, plus DELETE. Mounted under /v1 behind the API-key check. */
export async function botConfigRoutes(
  app: FastifyInstance,
  opts: { service: BotConfigService; registry: ProviderRegistry; env: AppConfig['env']; dialout: DialoutService },
): Promise<void> {
  const { service, registry, env, dialout } = opts;

  /** The body, validated, or a 400 naming every bad field (provider names included). */
  function parseBody(raw: unknown) {
    const body = telephonyConfigBody.safeParse(raw ?? undefined);
    const rawServices = (raw as { services?: unknown } | null | undefined)?.services;
    const names = { stt: registry.names('stt'), llm: registry.names('llm'), tts: registry.names('tts') };
    const providerIssues =
      rawServices && typeof rawServices === 'object'
        ? providerNameIssues(
            Object.fromEntries(Object.entries(rawServices).filter(([, v]) => typeof v === 'string')),
            names,
          )
        : [];
    if (!body.success) {
      throw new ApiError('invalid-request-error', [describeZodError(body.error), ...providerIssues].join('; '));
    }
    if (providerIssues.length > 0) throw new ApiError('invalid-request-error', providerIssues.join('; '));
    // A missing key or a bad service option is reported now, not on the first call.
    const setupIssues = providerSetupIssues(body.data, registry, env);
    if (setupIssues.length > 0) throw new ApiError('invalid-request-error', setupIssues.join('; '));
    return body.data;
  }

  /** Dial-out targets obey the rules of POST /v1/bots/start: a number to call from, this account's caller ids. */
  async function parseWithTargets(raw: unknown, accountId: string) {
    const body = parseBody(raw);
    // The configuration's caller is in the room too.
    if ((body.dialout_settings ?? []).length > 0) await dialout.plan(accountId, body.dialout_settings ?? [], 1);
    return body;
  }

  app.post('/bots/twilio-config', async (request) => {
    return service.create(request.account, await parseWithTargets(request.body, request.account.id));
  });

  app.post('/bots/twilio-config/:id', async (request) => {
    const { id } = idParams.parse(request.params);
    return service.replace(request.account, id, await parseWithTargets(request.body, request.account.id));
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
