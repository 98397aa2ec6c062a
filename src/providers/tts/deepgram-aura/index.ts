import { z } from 'zod';
import { requireApiKey, toWebSocketUrl, vendorEndpoint } from '../../endpoint.js';
import type { ProviderSettings } from '../../registry.js';
import { DEFAULT_VENDOR_TIMEOUT_MS, baseServiceOptionsSchema, parseOptions } from '../../vendor-options.js';
import { DEEPGRAM_ORIGIN } from '../../deepgram-socket.js';
import { ProviderError } from '../../types.js';
import { DEFAULT_AURA_FLUSH_LIMIT, DeepgramAuraTts, type DeepgramAuraConfig } from './aura-tts.js';

export { DeepgramAuraTts, type DeepgramAuraConfig } from './aura-tts.js';

export const DEEPGRAM_SPEAK_PATH = '/v1/speak';
export const DEFAULT_AURA_MODEL = 'aura-2-thalia-en';
const CLOSE_WAIT_MS = 1000;

/**
 * `config` options for `tts`. Aura names a voice by its model (`aura-2-thalia-en`), so `voice`
 * and `model` are two names for the same query parameter; `voice` wins when both are set.
 * `speed` becomes the `speed` query parameter. `language` is ignored: the model name carries it.
 */
export const deepgramAuraOptionsSchema = z.looseObject({
  voice: z.string().min(1).optional(),
  model: z.string().min(1).optional(),
  speed: z.number().positive().optional(),
});

/**
 * `service_options.deepgram_tts` keys the adapter reads. Any other key is added to the query as it
 * is (e.g. `mip_opt_out: true`), except the audio format, which the adapter fixes.
 */
const serviceOptionsSchema = baseServiceOptionsSchema;
const ADAPTER_KEYS = new Set(Object.keys(serviceOptionsSchema.shape));
const FIXED_PARAMS = new Set(['encoding', 'sample_rate', 'container', 'model']);

/**
 * The adapter's settings from a bot's: the endpoint is service_options.deepgram_tts.base_url,
 * else SWITCHBOARD_DEEPGRAM_URL, else https://api.deepgram.com (ws(s) derived, /v1/speak
 * appended); the key is api_keys.deepgram_tts or DEEPGRAM_API_KEY.
 */
export function deepgramAuraConfig(settings: ProviderSettings): DeepgramAuraConfig {
  const options = parseOptions('deepgram_tts', 'invalid tts options', deepgramAuraOptionsSchema, settings.options);
  const service = parseOptions(
    'deepgram_tts',
    'invalid service_options.deepgram_tts',
    serviceOptionsSchema,
    settings.serviceOptions,
  );
  const apiKey = requireApiKey(settings, 'deepgram_tts');
  const { baseUrl: base, guard } = vendorEndpoint(settings, 'deepgram', DEEPGRAM_ORIGIN);

  const query = new URLSearchParams({
    model: options.voice ?? options.model ?? DEFAULT_AURA_MODEL,
    encoding: 'mulaw',
    sample_rate: '8000',
  });
  if (options.speed !== undefined) query.set('speed', String(options.speed));
  for (const [key, value] of Object.entries(settings.serviceOptions)) {
    if (ADAPTER_KEYS.has(key)) continue;
    if (FIXED_PARAMS.has(key)) {
      throw new ProviderError(
        'deepgram_tts',
        `service_options.deepgram_tts.${key} cannot be set: the adapter fixes it (use the tts config option voice for the model)`,
      );
    }
    if (typeof value !== 'string' && typeof value !== 'number' && typeof value !== 'boolean') {
      throw new ProviderError(
        'deepgram_tts',
        `service_options.deepgram_tts.${key} must be a string, number or boolean`,
      );
    }
    query.set(key, String(value));
  }

  return {
    guard,
    url: `${toWebSocketUrl(base)}${DEEPGRAM_SPEAK_PATH}?${query.toString()}`,
    apiKey,
    timeoutMs: service.timeout_ms ?? DEFAULT_VENDOR_TIMEOUT_MS,
    closeWaitMs: CLOSE_WAIT_MS,
    flushLimit: DEFAULT_AURA_FLUSH_LIMIT,
  };
}

/** Builds the `deepgram_tts` TTS (registered as `registry.registerTts('deepgram_tts', createDeepgramAuraTts)`). */
export function createDeepgramAuraTts(settings: ProviderSettings): DeepgramAuraTts {
  return new DeepgramAuraTts(deepgramAuraConfig(settings));
}
