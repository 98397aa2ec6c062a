import { requireApiKey, vendorEndpoint } from '../../endpoint.js';
import type { ProviderSettings } from '../../registry.js';
import { llmOptionsSchema, parseLlmOptions, parseLlmServiceOptions } from '../llm-http.js';
import { GeminiLlm } from './gemini-llm.js';

export { GeminiLlm, type GeminiLlmConfig, toGeminiContents } from './gemini-llm.js';

export const GEMINI_DEFAULT_BASE_URL = 'https://generativelanguage.googleapis.com';
export const GEMINI_DEFAULT_MODEL = 'gemini-2.0-flash';

/** `config` options: model, temperature (0-2) and max_tokens (sent as generationConfig.maxOutputTokens). */
export const geminiOptionsSchema = llmOptionsSchema;

/**
 * The `gemini` LLM (text, REST streaming; not Gemini Live). Endpoint: service_options.gemini.base_url,
 * else SWITCHBOARD_GEMINI_URL, else https://generativelanguage.googleapis.com. Key: api_keys.gemini
 * or GEMINI_API_KEY, sent as x-goog-api-key (never in the URL, where proxies would log it).
 */
export function createGeminiLlm(settings: ProviderSettings): GeminiLlm {
  const options = parseLlmOptions('gemini', geminiOptionsSchema, settings.options);
  const service = parseLlmServiceOptions('gemini', settings);
  const apiKey = requireApiKey(settings, 'gemini');
  const { baseUrl, guard } = vendorEndpoint(settings, 'gemini', GEMINI_DEFAULT_BASE_URL);
  return new GeminiLlm({
    baseUrl,
    guard,
    apiKey,
    model: options.model ?? GEMINI_DEFAULT_MODEL,
    temperature: options.temperature,
    maxTokens: options.max_tokens,
    timeoutMs: service.timeoutMs,
    extraBody: service.extraBody,
  });
}
