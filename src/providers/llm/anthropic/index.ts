import { z } from 'zod';
import { requireApiKey, vendorEndpoint } from '../../endpoint.js';
import type { ProviderSettings } from '../../registry.js';
import { endpointUrl, llmOptionsSchema, parseLlmOptions, parseLlmServiceOptions } from '../llm-http.js';
import { AnthropicLlm, MESSAGES_PATH } from './anthropic-llm.js';

export { AnthropicLlm, type AnthropicLlmConfig, toAnthropicMessages } from './anthropic-llm.js';

export const ANTHROPIC_DEFAULT_BASE_URL = 'https://api.anthropic.com';
export const ANTHROPIC_DEFAULT_MODEL = 'claude-3-5-haiku-latest';
/** The API requires max_tokens; a spoken reply rarely needs more. */
export const ANTHROPIC_DEFAULT_MAX_TOKENS = 1024;

/** `config` options: model, temperature (clamped to the API's 0-1), max_tokens (default 1024). */
export const anthropicOptionsSchema = llmOptionsSchema.extend({
  temperature: z
    .number()
    .min(0)
    .max(2)
    .transform((value) => Math.min(value, 1))
    .optional(),
  max_tokens: z.number().int().min(1).default(ANTHROPIC_DEFAULT_MAX_TOKENS),
});

/**
 * The `anthropic` LLM. Endpoint: service_options.anthropic.base_url, else SWITCHBOARD_ANTHROPIC_URL,
 * else https://api.anthropic.com; /v1/messages is appended. Key: api_keys.anthropic or ANTHROPIC_API_KEY.
 */
export function createAnthropicLlm(settings: ProviderSettings): AnthropicLlm {
  const options = parseLlmOptions('anthropic', anthropicOptionsSchema, settings.options);
  const service = parseLlmServiceOptions('anthropic', settings);
  const apiKey = requireApiKey(settings, 'anthropic');
  const endpoint = vendorEndpoint(settings, 'anthropic', ANTHROPIC_DEFAULT_BASE_URL);
  return new AnthropicLlm({
    url: endpointUrl(endpoint.baseUrl, MESSAGES_PATH),
    guard: endpoint.guard,
    apiKey,
    model: options.model ?? ANTHROPIC_DEFAULT_MODEL,
    maxTokens: options.max_tokens,
    temperature: options.temperature,
    timeoutMs: service.timeoutMs,
    extraBody: service.extraBody,
  });
}
