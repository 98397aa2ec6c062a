import type { z } from 'zod';
import { providerNameIssues } from '../bots/bot-config-schema.js';
import type { AppConfig } from '../config/env.js';
import { providerSetupIssues } from '../pipeline/provider-settings.js';
import type { ProviderRegistry } from '../providers/registry.js';
import { ApiError } from '../shared/api-error.js';
import type { AddressPolicy } from '../security/address-policy.js';
import { webhookUrlProblem } from '../security/webhook-client.js';

/**
 * A bot body schema that also refuses provider names this server cannot run (the catalog's and
 * the registry's). The check runs even when other fields failed, so one 400 names every problem,
 * the unknown names last.
 */
export function withKnownProviders<T extends z.ZodObject>(schema: T, registry: ProviderRegistry): T {
  return schema.superRefine(
    (value, ctx) => {
      const services = (value as { services?: unknown } | null | undefined)?.services;
      if (!services || typeof services !== 'object') return;
      const names = Object.fromEntries(Object.entries(services).filter(([, name]) => typeof name === 'string'));
      const known = { stt: registry.names('stt'), llm: registry.names('llm'), tts: registry.names('tts') };
      for (const issue of providerNameIssues(names, known)) {
        ctx.addIssue({ code: 'custom', path: ['services', issue.kind], message: issue.message });
      }
    },
    { when: () => true },
  );
}

/** A missing key or a bad service option is a 400 now, not a failure on the first call. */
export function assertProvidersSetUp(
  body: Parameters<typeof providerSetupIssues>[0],
  registry: ProviderRegistry,
  env: AppConfig['env'],
): void {
  const issues = providerSetupIssues(body, registry, env);
  if (issues.length > 0) throw new ApiError('invalid-request-error', issues.join('; '));
}

/**
 * Each `webhook_tools` URL against the webhook address policy (a metadata address, or link-local
 * unless the operator allows it): a 400 naming the field now, not an error result mid-call. Host
 * names are judged again on every connection.
 */
export function assertWebhookToolUrls(
  body: { webhook_tools?: Record<string, { url: string }> | undefined },
  policy: AddressPolicy,
): void {
  const issues: string[] = [];
  for (const [name, tool] of Object.entries(body.webhook_tools ?? {})) {
    const problem = webhookUrlProblem(tool.url, policy);
    if (problem) issues.push(`webhook_tools.${name}.url: ${problem}`);
  }
  if (issues.length > 0) throw new ApiError('invalid-request-error', issues.join('; '));
}
