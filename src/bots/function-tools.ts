import type { z } from 'zod';
import { ANY_FUNCTION, type ConfigEntry } from './bot-config-schema.js';

/** Functions Switchboard answers itself, offered to the model when the llm option `tools` names them. */
export const BUILT_IN_FUNCTION_NAMES = ['end_call', 'transfer_call', 'send_dtmf'] as const;

/** A `tools` entry's function name: a bare name, OpenAI's `{type, function: {name}}`, or a vendor's `{name}`. */
export function functionName(entry: unknown): string | undefined {
  if (typeof entry === 'string') return entry;
  if (!entry || typeof entry !== 'object') return undefined;
  const record = entry as { function?: { name?: unknown }; name?: unknown };
  const name = record.function?.name ?? record.name;
  return typeof name === 'string' && name.length > 0 ? name : undefined;
}

/**
 * Checks `webhook_tools` against the llm option `tools`, so a mistake surfaces when the
 * configuration is saved rather than as a function the model cannot call mid-call:
 * - a bare name in `tools` must be a built-in;
 * - every other `tools` entry names its function, once;
 * - every `webhook_tools` entry has its function's schema in `tools` ("*", the entry for every
 *   function without its own, needs none);
 * - every function with a schema is answered: by a webhook, by Switchboard (a built-in name), or
 *   by a room's client (`roomClient`: a bot started in a room, whose Pipecat client can register
 *   function handlers; a phone-only configuration has no such client).
 */
export function checkFunctionTools(
  value: { config: ConfigEntry[]; webhook_tools?: Record<string, unknown> | undefined },
  ctx: z.RefinementCtx,
  options: { roomClient: boolean },
): void {
  const builtIns: readonly string[] = BUILT_IN_FUNCTION_NAMES;
  const webhooks = value.webhook_tools ?? {};
  const schemas = new Set<string>();
  value.config.forEach((entry, entryIndex) => {
    if (entry.service !== 'llm') return;
    entry.options.forEach((option, optionIndex) => {
      if (option.name !== 'tools' || !Array.isArray(option.value)) return;
      option.value.forEach((tool: unknown, toolIndex: number) => {
        const path = ['config', entryIndex, 'options', optionIndex, 'value', toolIndex];
        const name = functionName(tool);
        if (typeof tool === 'string') {
          if (!builtIns.includes(tool))
            ctx.addIssue({
              code: 'custom',
              path,
              message: `unknown built-in function "${tool}"; built-ins: ${builtIns.join(', ')} (a function of your own needs its schema: {"type": "function", "function": {"name": …, "parameters": …}})`,
            });
          return;
        }
        if (!name) {
          ctx.addIssue({
            code: 'custom',
            path,
            message:
              'must be a function in OpenAI\'s format: {"type": "function", "function": {"name": …, "parameters": …}}',
          });
          return;
        }
        if (schemas.has(name)) {
          ctx.addIssue({ code: 'custom', path, message: `function "${name}" is listed twice` });
          return;
        }
        schemas.add(name);
        if (!(name in webhooks) && !(ANY_FUNCTION in webhooks) && !builtIns.includes(name) && !options.roomClient)
          ctx.addIssue({
            code: 'custom',
            path,
            message: `function "${name}" has nothing to answer it: add a webhook_tools entry for it (a phone bot has no room client to answer functions)`,
          });
      });
    });
  });
  for (const name of Object.keys(webhooks)) {
    if (name !== ANY_FUNCTION && !schemas.has(name))
      ctx.addIssue({
        code: 'custom',
        path: ['webhook_tools', name],
        message: `function "${name}" has no schema in the llm option "tools": add {"type": "function", "function": {"name": "${name}", "parameters": …}} there`,
      });
  }
}
