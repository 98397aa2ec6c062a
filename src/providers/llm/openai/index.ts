import { type VendorEndpoint, requireApiKey, vendorEndpoint } from '../../endpoint.js';
import type { Factory, ProviderSettings } from '../../registry.js';
import { type LlmProvider, ProviderError } from '../../types.js';
import { endpointUrl, llmOptionsSchema, parseLlmOptions, parseLlmServiceOptions } from '../llm-http.js';
import { OpenAiLlm } from './openai-llm.js';

export { OpenAiLlm, type OpenAiLlmConfig } from './openai-llm.js';

/** `config` options of the OpenAI-compatible LLMs: model, temperature (0-2), max_tokens. */
export const openAiOptionsSchema = llmOptionsSchema;

export const CHAT_COMPLETIONS_PATH = '/v1/chat/completions';

interface CompatibleVendor {
  /** Public origin (with any path prefix before /v1); undefined when the bot must name one. */
  baseUrl: string | undefined;
  /** Model when the bot sets none; undefined when the bot must name one. */
  model: string | undefined;
  keyRequired: boolean;
  /** Where else the key may come from when api_keys.<name> and <NAME>_API_KEY are unset. */
  fallbackKeyEnv?: string;
  maxTokensField: 'max_tokens' | 'max_completion_tokens';
}

/** Every name that speaks Chat Completions, with its defaults. One adapter serves them all. */
export const OPENAI_COMPATIBLE = {
  openai: {
    baseUrl: 'https://api.openai.com',
    model: 'gpt-4o-mini',
    keyRequired: true,
    maxTokensField: 'max_completion_tokens',
  },
  groq: {
    baseUrl: 'https://api.groq.com/openai',
    model: 'llama-3.3-70b-versatile',
    keyRequired: true,
    maxTokensField: 'max_tokens',
  },
  together: {
    baseUrl: 'https://api.together.xyz',
    model: 'meta-llama/Llama-3.3-70B-Instruct-Turbo',
    keyRequired: true,
    maxTokensField: 'max_tokens',
  },
  grok: {
    baseUrl: 'https://api.x.ai',
    model: 'grok-3-mini',
    keyRequired: true,
    fallbackKeyEnv: 'XAI_API_KEY',
    maxTokensField: 'max_tokens',
  },
  // A local Ollama; the key is ignored by Ollama but sent when configured (a proxy may want it).
  ollama: { baseUrl: 'http://127.0.0.1:11434', model: 'llama3.2', keyRequired: false, maxTokensField: 'max_tokens' },
  // Any other compatible server (vLLM, llama.cpp, LiteLLM, ...): the bot names where and which model.
  custom_llm: { baseUrl: undefined, model: undefined, keyRequired: false, maxTokensField: 'max_tokens' },
} as const satisfies Record<string, CompatibleVendor>;

export type OpenAiCompatibleName = keyof typeof OPENAI_COMPATIBLE;
export const OPENAI_COMPATIBLE_NAMES = Object.keys(OPENAI_COMPATIBLE) as OpenAiCompatibleName[];

/**
 * Builds the LLM registered as `name`. The endpoint is service_options.<name>.base_url, else
 * SWITCHBOARD_<NAME>_URL, else the vendor's origin; /v1/chat/completions is appended (once,
 * even if the base already ends in /v1).
 */
export function createOpenAiCompatibleLlm(name: OpenAiCompatibleName, settings: ProviderSettings): OpenAiLlm {
  const vendor: CompatibleVendor = OPENAI_COMPATIBLE[name];
  const options = parseLlmOptions(name, openAiOptionsSchema, settings.options);
  const service = parseLlmServiceOptions(name, settings);
  const apiKey = resolveKey(name, vendor, settings);
  const endpoint = resolveEndpoint(name, vendor, settings);
  const model = options.model ?? vendor.model;
  if (!model) throw new ProviderError(name, 'no model: set the llm option "model" to a model the server serves');
  return new OpenAiLlm({
    name,
    url: endpointUrl(endpoint.baseUrl, CHAT_COMPLETIONS_PATH),
    guard: endpoint.guard,
    apiKey,
    model,
    temperature: options.temperature,
    maxTokens: options.max_tokens,
    maxTokensField: vendor.maxTokensField,
    timeoutMs: service.timeoutMs,
    extraBody: service.extraBody,
  });
}

/** A registry factory: `registry.registerLlm(name, openAiCompatibleFactory(name))`. */
export function openAiCompatibleFactory(name: OpenAiCompatibleName): Factory<LlmProvider> {
  return (settings) => createOpenAiCompatibleLlm(name, settings);
}

function resolveKey(name: string, vendor: CompatibleVendor, settings: ProviderSettings): string | undefined {
  const fallback = vendor.fallbackKeyEnv ? settings.env[vendor.fallbackKeyEnv] : undefined;
  const apiKey = settings.apiKey || fallback || undefined;
  if (!vendor.keyRequired) return apiKey;
  return requireApiKey({ ...settings, apiKey }, name);
}

function resolveEndpoint(name: string, vendor: CompatibleVendor, settings: ProviderSettings): VendorEndpoint {
  if (vendor.baseUrl) return vendorEndpoint(settings, name, vendor.baseUrl);
  const perBot = settings.serviceOptions.base_url;
  const envName = `SWITCHBOARD_${name.toUpperCase()}_URL`;
  const hasOverride = (typeof perBot === 'string' && perBot.length > 0) || (settings.env[envName] ?? '').length > 0;
  if (!hasOverride) {
    throw new ProviderError(
      name,
      `no endpoint: set service_options.${name}.base_url in the bot configuration or ${envName} on the server (for example http://127.0.0.1:8000)`,
    );
  }
  // The default is never used: an override exists.
  return vendorEndpoint(settings, name, 'http://127.0.0.1');
}
