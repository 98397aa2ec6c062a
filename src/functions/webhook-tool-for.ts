import { ANY_FUNCTION } from '../bots/bot-config-schema.js';

/** The `webhook_tools` entry that answers `name`: its own, else the "*" entry for every function. */
export function webhookToolFor<Entry>(
  webhookTools: Record<string, Entry> | undefined,
  name: string,
): Entry | undefined {
  if (!webhookTools) return undefined;
  return Object.hasOwn(webhookTools, name) ? webhookTools[name] : webhookTools[ANY_FUNCTION];
}
