import { z } from 'zod';
import { requireApiKey, vendorEndpoint } from '../../endpoint.js';
import type { ProviderSettings } from '../../registry.js';
import { ProviderError } from '../../types.js';
import { OpenAiTts } from './openai-tts.js';

export { OPENAI_PCM_FORMAT, OpenAiTts, type OpenAiTtsConfig } from './openai-tts.js';

export const OPENAI_ORIGIN = 'https://api.openai.com';
export const SPEECH_PATH = '/v1/audio/speech';
export const DEFAULT_OPENAI_TTS_MODEL = 'gpt-4o-mini-tts';
export const DEFAULT_OPENAI_TTS_VOICE = 'alloy';
/** Silence allowed per request (service_options.openai_tts.timeout_ms). */
export const DEFAULT_TTS_TIMEOUT_MS = 10_000;

/**
 * `config` options: voice, model, speed (0.25-4, sent as `speed`). OpenAI's speech endpoint has
 * no language parameter (it speaks the language of the text), so `language` is ignored, as is
 * text_filter (the pipeline's).
 */
export const openAiTtsOptionsSchema = z.looseObject({
  voice: z.string().min(1).optional(),
  model: z.string().min(1).optional(),
  speed: z.number().min(0.25).max(4).optional(),
});

/** `service_options.openai_tts` keys the adapter reads; any other (e.g. `instructions`) goes into the request body. */
const serviceOptionsSchema = z.looseObject({
  base_url: z.string().optional(),
  timeout_ms: z.coerce.number().int().min(1).max(600_000).optional(),
});
const ADAPTER_KEYS = new Set(Object.keys(serviceOptionsSchema.shape));

/**
 * Builds the `openai_tts` TTS. It is OpenAI's API, so the endpoint override is OpenAI's:
 * service_options.openai_tts.base_url, else SWITCHBOARD_OPENAI_URL, else https://api.openai.com
 * (/v1/audio/speech appended, once); the key is api_keys.openai_tts or OPENAI_API_KEY.
 */
export function createOpenAiTts(settings: ProviderSettings): OpenAiTts {
  const options = parse(openAiTtsOptionsSchema, settings.options, 'invalid tts options');
  const service = parse(serviceOptionsSchema, settings.serviceOptions, 'invalid service_options.openai_tts');
  const apiKey = requireApiKey(settings, 'openai_tts');
  const endpoint = vendorEndpoint(settings, 'openai', OPENAI_ORIGIN);
  const base = endpoint.baseUrl.replace(/\/v1$/, '');
  const extraBody: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(settings.serviceOptions)) {
    if (!ADAPTER_KEYS.has(key)) extraBody[key] = value;
  }
  return new OpenAiTts({
    guard: endpoint.guard,
    url: base + SPEECH_PATH,
    apiKey,
    model: options.model ?? DEFAULT_OPENAI_TTS_MODEL,
    voice: options.voice ?? DEFAULT_OPENAI_TTS_VOICE,
    speed: options.speed,
    extraBody,
    timeoutMs: service.timeout_ms ?? DEFAULT_TTS_TIMEOUT_MS,
  });
}

function parse<S extends z.ZodType>(schema: S, value: unknown, what: string): z.infer<S> {
  const parsed = schema.safeParse(value);
  if (!parsed.success) {
    const issues = parsed.error.issues.map((issue) => `${issue.path.join('.') || '(root)'}: ${issue.message}`).join('; ');
    throw new ProviderError('openai_tts', `${what}: ${issues}`);
  }
  return parsed.data;
}
