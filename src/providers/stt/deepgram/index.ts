import { z } from 'zod';
import { DEEPGRAM_ORIGIN } from '../../deepgram-socket.js';
import { requireApiKey, toWebSocketUrl, vendorEndpoint } from '../../endpoint.js';
import type { ProviderSettings } from '../../registry.js';
import { DEFAULT_VENDOR_TIMEOUT_MS, baseServiceOptionsSchema, parseOptions } from '../../vendor-options.js';
import { ProviderError } from '../../types.js';
import { DeepgramStt, type DeepgramSttConfig } from './deepgram-stt.js';

export { DeepgramStt, type DeepgramSttConfig } from './deepgram-stt.js';

export const DEEPGRAM_LISTEN_PATH = '/v1/listen';
export const DEFAULT_DEEPGRAM_STT_MODEL = 'nova-3';
export const DEFAULT_DEEPGRAM_LANGUAGE = 'en-US';
/** Silence before `speech_final`. Deepgram's own default (10 ms) would end turns mid-sentence on a phone line. */
export const DEFAULT_ENDPOINTING_MS = 300;
/** Word gap before UtteranceEnd; Deepgram accepts 1000 ms and more. */
export const DEFAULT_UTTERANCE_END_MS = 1000;

/** Connection upkeep; not configurable per bot (tests build DeepgramStt with their own). */
export const DEEPGRAM_STT_UPKEEP = {
  /** Deepgram closes after 10 s without audio or KeepAlive; its docs advise one every 3–5 s. */
  keepAliveIntervalMs: 4000,
  closeWaitMs: 1000,
  reconnectAttempts: 5,
  reconnectBackoffMs: 250,
  /** Long enough for an unfinished phrase plus the audio written while reconnecting. */
  replayBufferMs: 3000,
} as const;

/**
 * `config` options for `stt`: model (default nova-3) and language (default en-US; `multi` for
 * Deepgram's multilingual mode). Other names are the pipeline's and ignored here.
 */
export const deepgramSttOptionsSchema = z.looseObject({
  model: z.string().min(1).optional(),
  language: z.string().min(1).optional(),
});

/**
 * `service_options.deepgram` keys the adapter reads. Any other key is added to the query as it is
 * (arrays repeat the parameter, e.g. `keyterm: ["Switchboard", "PIN"]`), except the ones the
 * adapter must control.
 */
const serviceOptionsSchema = baseServiceOptionsSchema.extend({
  endpointing: z.union([z.number().int().min(10).max(60_000), z.literal(false)]).optional(),
  utterance_end_ms: z.number().int().min(1000).max(60_000).optional(),
  smart_format: z.boolean().optional(),
});
const ADAPTER_KEYS = new Set(Object.keys(serviceOptionsSchema.shape));
/** The audio format and the events the adapter relies on; overriding them would break the stream. */
const FIXED_PARAMS = new Set([
  'encoding',
  'sample_rate',
  'channels',
  'multichannel',
  'interim_results',
  'vad_events',
  'model',
  'language',
]);

/**
 * The adapter's settings from a bot's: the endpoint is service_options.deepgram.base_url, else
 * SWITCHBOARD_DEEPGRAM_URL, else https://api.deepgram.com (ws(s) derived, /v1/listen appended);
 * the key is api_keys.deepgram or DEEPGRAM_API_KEY.
 */
export function deepgramSttConfig(settings: ProviderSettings): DeepgramSttConfig {
  const options = parseOptions('deepgram', 'invalid stt options', deepgramSttOptionsSchema, settings.options);
  const service = parseOptions(
    'deepgram',
    'invalid service_options.deepgram',
    serviceOptionsSchema,
    settings.serviceOptions,
  );
  const apiKey = requireApiKey(settings, 'deepgram');
  const { baseUrl: base, guard } = vendorEndpoint(settings, 'deepgram', DEEPGRAM_ORIGIN);

  const query = new URLSearchParams({
    model: options.model ?? DEFAULT_DEEPGRAM_STT_MODEL,
    language: options.language ?? DEFAULT_DEEPGRAM_LANGUAGE,
    encoding: 'mulaw',
    sample_rate: '8000',
    channels: '1',
    interim_results: 'true',
    endpointing: String(service.endpointing ?? DEFAULT_ENDPOINTING_MS),
    utterance_end_ms: String(service.utterance_end_ms ?? DEFAULT_UTTERANCE_END_MS),
    vad_events: 'true',
    smart_format: String(service.smart_format ?? true),
  });
  for (const [key, value] of Object.entries(settings.serviceOptions)) {
    if (ADAPTER_KEYS.has(key)) continue;
    if (FIXED_PARAMS.has(key)) {
      throw new ProviderError(
        'deepgram',
        `service_options.deepgram.${key} cannot be set: the adapter fixes it (use the stt config options for model and language)`,
      );
    }
    for (const item of Array.isArray(value) ? value : [value]) {
      if (typeof item !== 'string' && typeof item !== 'number' && typeof item !== 'boolean') {
        throw new ProviderError(
          'deepgram',
          `service_options.deepgram.${key} must be a string, number, boolean or an array of them`,
        );
      }
      query.append(key, String(item));
    }
  }

  return {
    guard,
    url: `${toWebSocketUrl(base)}${DEEPGRAM_LISTEN_PATH}?${query.toString()}`,
    apiKey,
    timeoutMs: service.timeout_ms ?? DEFAULT_VENDOR_TIMEOUT_MS,
    ...DEEPGRAM_STT_UPKEEP,
  };
}

/** Builds the `deepgram` STT (registered as `registry.registerStt('deepgram', createDeepgramStt)`). */
export function createDeepgramStt(settings: ProviderSettings): DeepgramStt {
  return new DeepgramStt(deepgramSttConfig(settings));
}
