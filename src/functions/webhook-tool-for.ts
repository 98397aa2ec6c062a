import { ANY_FUNCTION, type WebhookToolSettings } from '../bots/bot-config-schema.js';

/** The `webhook_tools` entry that answers `name`: its own, else the "*" entry for every function. */
export function webhookToolFor(
  webhookTools: Record<string, WebhookToolSettings> | undefined,
  name: string,
): WebhookToolSettings | undefined {
  if (!webhookTools) return undefined;
  return Object.hasOwn(webhookTools, name) ? webhookTools[name] : webhookTools[ANY_FUNCTION];
}
