import { z } from 'zod';
import { requireApiKey, vendorEndpoint } from '../../endpoint.js';
import type { ProviderSettings } from '../../registry.js';
import {
  DEFAULT_VENDOR_TIMEOUT_MS,
  baseServiceOptionsSchema,
  otherEntries,
  parseOptions,
} from '../../vendor-options.js';
import { OpenAiTts } from './openai-tts.js';
import { SPEECH_PATH } from './openai-tts-messages.js';

export { OPENAI_PCM_FORMAT, OpenAiTts, type OpenAiTtsConfig } from './openai-tts.js';

export const OPENAI_ORIGIN = 'https://api.openai.com';
export const DEFAULT_OPENAI_TTS_MODEL = 'gpt-4o-mini-tts';
export const DEFAULT_OPENAI_TTS_VOICE = 'alloy';

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
const serviceOptionsSchema = baseServiceOptionsSchema;
const ADAPTER_KEYS = new Set(Object.keys(serviceOptionsSchema.shape));

/**
 * Builds the `openai_tts` TTS. It is OpenAI's API, so the endpoint override is OpenAI's:
 * service_options.openai_tts.base_url, else SWITCHBOARD_OPENAI_URL, else https://api.openai.com
 * (/v1/audio/speech appended, once); the key is api_keys.openai_tts or OPENAI_API_KEY.
 */
export function createOpenAiTts(settings: ProviderSettings): OpenAiTts {
  const options = parseOptions('openai_tts', 'invalid tts options', openAiTtsOptionsSchema, settings.options);
  const service = parseOptions(
    'openai_tts',
    'invalid service_options.openai_tts',
    serviceOptionsSchema,
    settings.serviceOptions,
  );
  const apiKey = requireApiKey(settings, 'openai_tts');
  const endpoint = vendorEndpoint(settings, 'openai', OPENAI_ORIGIN);
  const base = endpoint.baseUrl.replace(/\/v1$/, '');
  const extraBody = otherEntries(settings.serviceOptions, ADAPTER_KEYS);
  return new OpenAiTts({
    guard: endpoint.guard,
    url: base + SPEECH_PATH,
    apiKey,
    model: options.model ?? DEFAULT_OPENAI_TTS_MODEL,
    voice: options.voice ?? DEFAULT_OPENAI_TTS_VOICE,
    speed: options.speed,
    extraBody,
    timeoutMs: service.timeout_ms ?? DEFAULT_VENDOR_TIMEOUT_MS,
  });
}
