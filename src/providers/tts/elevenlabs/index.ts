import { z } from 'zod';
import { requireApiKey, toWebSocketUrl, vendorEndpoint } from '../../endpoint.js';
import type { ProviderSettings } from '../../registry.js';
import { DEFAULT_VENDOR_TIMEOUT_MS, baseServiceOptionsSchema, parseOptions } from '../../vendor-options.js';
import { ProviderError } from '../../types.js';
import { ULAW_8000, generationConfig, pronunciationDictionaryLocator, voiceSettings } from './elevenlabs-messages.js';
import { ElevenLabsTts } from './elevenlabs-tts.js';

export { ElevenLabsTts, type ElevenLabsTtsConfig } from './elevenlabs-tts.js';

export const ELEVENLABS_ORIGIN = 'https://api.elevenlabs.io';
/** "George", a voice from ElevenLabs' public voice library used throughout its API examples. */
export const DEFAULT_ELEVENLABS_VOICE_ID = 'JBFqnCBsd6RMkjVDRZzb';
export const DEFAULT_ELEVENLABS_MODEL = 'eleven_flash_v2_5';
/** Models that take `language_code` (others ignore the language option), as pipecat and ElevenLabs' docs list them. */
export const ELEVENLABS_LANGUAGE_MODELS: ReadonlySet<string> = new Set(['eleven_flash_v2_5', 'eleven_turbo_v2_5']);
/** The call's socket closes after this long without a reply. */
const IDLE_CLOSE_MS = 30_000;
/**
 * Query parameters sent unless service_options say otherwise. auto_mode: pieces are whole
 * sentences, so generate each at once instead of waiting for the chunk schedule. A socket idle
 * between replies must outlive IDLE_CLOSE_MS (ElevenLabs' default inactivity timeout is 20 s).
 */
const DEFAULT_QUERY: Record<string, string> = { auto_mode: 'true', inactivity_timeout: '60' };

/**
 * `config` options: voice (a voice id), model, language (as `language_code`, for the models that
 * take it), speed (as `voice_settings.speed`; ElevenLabs accepts 0.7-1.2). Others (text_filter)
 * are the pipeline's and ignored here.
 */
export const elevenLabsOptionsSchema = z.looseObject({
  voice: z.string().min(1).optional(),
  model: z.string().min(1).optional(),
  language: z.string().min(1).optional(),
  speed: z.number().positive().optional(),
});

/**
 * `service_options.elevenlabs`: base_url and timeout_ms for the adapter; voice_settings,
 * generation_config and pronunciation_dictionary_locators go into each context's first message;
 * any other key must be a string, number or boolean and becomes a query parameter (auto_mode,
 * apply_text_normalization, enable_logging, enable_ssml_parsing, inactivity_timeout, seed, ...).
 */
const serviceOptionsSchema = baseServiceOptionsSchema.extend({
  voice_settings: voiceSettings.optional(),
  generation_config: generationConfig.optional(),
  pronunciation_dictionary_locators: z.array(pronunciationDictionaryLocator).optional(),
});
const ADAPTER_KEYS = new Set(['base_url', 'timeout_ms']);
const INIT_KEYS = new Set(['voice_settings', 'generation_config', 'pronunciation_dictionary_locators']);
/** What makes this adapter work; service_options cannot change them. */
const FIXED_QUERY_KEYS = new Set(['model_id', 'output_format']);

/**
 * Builds the `elevenlabs` TTS. The endpoint is service_options.elevenlabs.base_url, else
 * SWITCHBOARD_ELEVENLABS_URL, else https://api.elevenlabs.io (ws(s) derived); the key is
 * api_keys.elevenlabs or ELEVENLABS_API_KEY.
 */
export function createElevenLabsTts(settings: ProviderSettings): ElevenLabsTts {
  const options = parseOptions('elevenlabs', 'invalid tts options', elevenLabsOptionsSchema, settings.options);
  const service = parseOptions(
    'elevenlabs',
    'invalid service_options.elevenlabs',
    serviceOptionsSchema,
    settings.serviceOptions,
  );
  const apiKey = requireApiKey(settings, 'elevenlabs');
  const endpoint = vendorEndpoint(settings, 'elevenlabs', ELEVENLABS_ORIGIN);
  const base = endpoint.baseUrl.replace(/\/v1$/, '');
  const voice = options.voice ?? DEFAULT_ELEVENLABS_VOICE_ID;
  const model = options.model ?? DEFAULT_ELEVENLABS_MODEL;

  const query = new URLSearchParams(DEFAULT_QUERY);
  const initFields: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(settings.serviceOptions)) {
    if (ADAPTER_KEYS.has(key) || FIXED_QUERY_KEYS.has(key)) continue;
    if (INIT_KEYS.has(key)) {
      initFields[key] = value;
    } else if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') {
      query.set(key, String(value));
    } else {
      throw new ProviderError(
        'elevenlabs',
        `invalid service_options.elevenlabs: ${key}: must be a string, number or boolean (it is a query parameter)`,
      );
    }
  }
  if (options.speed !== undefined) initFields.voice_settings = { ...service.voice_settings, speed: options.speed };
  if (options.language && ELEVENLABS_LANGUAGE_MODELS.has(model) && !query.has('language_code'))
    query.set('language_code', options.language);
  query.set('model_id', model);
  query.set('output_format', ULAW_8000);

  return new ElevenLabsTts({
    guard: endpoint.guard,
    url: `${toWebSocketUrl(base)}/v1/text-to-speech/${encodeURIComponent(voice)}/multi-stream-input?${query}`,
    apiKey,
    initFields,
    timeoutMs: service.timeout_ms ?? DEFAULT_VENDOR_TIMEOUT_MS,
    idleCloseMs: IDLE_CLOSE_MS,
  });
}
