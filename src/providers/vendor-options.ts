import { z } from 'zod';
import { ProviderError } from './types.js';

/**
 * What every adapter factory does with a bot's options: parse them with its schema into a clear,
 * non-retryable error, and the service options every vendor takes.
 */

/**
 * How long a vendor may stay silent while an answer is due (a handshake, the first token or audio,
 * a stall mid-stream) unless `service_options.<provider>.timeout_ms` says otherwise.
 */
export const DEFAULT_VENDOR_TIMEOUT_MS = 10_000;

/** `service_options.<provider>` keys every adapter reads itself: where the vendor is, and how long to wait for it. */
export const baseServiceOptionsSchema = z.looseObject({
  base_url: z.string().optional(),
  timeout_ms: z.coerce.number().int().min(1).max(600_000).optional(),
});

/** Parses options with a schema; a wrong type becomes `<provider>: <what>: <path>: <problem>`. */
export function parseOptions<S extends z.ZodType>(
  provider: string,
  what: string,
  schema: S,
  value: unknown,
): z.infer<S> {
  const parsed = schema.safeParse(value);
  if (!parsed.success) throw new ProviderError(provider, `${what}: ${describeIssues(parsed.error)}`);
  return parsed.data;
}

export function describeIssues(error: z.ZodError): string {
  return error.issues.map((issue) => `${issue.path.join('.') || '(root)'}: ${issue.message}`).join('; ');
}

/** The entries of `record` whose keys are not in `taken` (service options an adapter passes on to its vendor). */
export function otherEntries(record: Record<string, unknown>, taken: ReadonlySet<string>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(record)) {
    if (!taken.has(key)) out[key] = value;
  }
  return out;
}
