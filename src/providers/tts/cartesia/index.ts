import { z } from 'zod';
import { requireApiKey, toWebSocketUrl, vendorEndpoint } from '../../endpoint.js';
import type { ProviderSettings } from '../../registry.js';
import {
  DEFAULT_VENDOR_TIMEOUT_MS,
  baseServiceOptionsSchema,
  otherEntries,
  parseOptions,
} from '../../vendor-options.js';
import { isRecord } from '../../../shared/is-record.js';
import { CARTESIA_VERSION } from './cartesia-messages.js';
import { CartesiaTts } from './cartesia-tts.js';

export { CartesiaTts, type CartesiaTtsConfig } from './cartesia-tts.js';

export const CARTESIA_ORIGIN = 'https://api.cartesia.ai';
export const CARTESIA_WEBSOCKET_PATH = '/tts/websocket';
/**
 * Cartesia requires a voice. This public voice is the one used in the example of Cartesia's
 * WebSocket API reference (docs/providers.md section 4); bots should pick their own.
 */
export const DEFAULT_CARTESIA_VOICE_ID = 'a0e99841-438c-4a64-b679-ae501e7d6091';
export const DEFAULT_CARTESIA_MODEL = 'sonic-2';
export const DEFAULT_CARTESIA_LANGUAGE = 'en';
/** The call's socket closes after this long without a reply (Cartesia's own idle limit is longer). */
const IDLE_CLOSE_MS = 30_000;

/**
 * `config` options: voice (a voice id), model, language, speed. Speed becomes
 * `generation_config.speed`, which Cartesia applies to sonic-3 and later. Others (text_filter)
 * are the pipeline's and ignored here.
 */
export const cartesiaOptionsSchema = z.looseObject({
  voice: z.string().min(1).optional(),
  model: z.string().min(1).optional(),
  language: z.string().min(1).optional(),
  speed: z.number().positive().optional(),
});

/** `service_options.cartesia` keys the adapter reads; any other key is merged into every generation request. */
const serviceOptionsSchema = baseServiceOptionsSchema.extend({
  /** Overrides the pinned Cartesia-Version (payloads differ between versions: test before changing). */
  cartesia_version: z.string().min(1).optional(),
});
const ADAPTER_KEYS = new Set(Object.keys(serviceOptionsSchema.shape));

/**
 * Builds the `cartesia` TTS. The endpoint is service_options.cartesia.base_url, else
 * SWITCHBOARD_CARTESIA_URL, else https://api.cartesia.ai (ws(s) derived, /tts/websocket
 * appended); the key is api_keys.cartesia or CARTESIA_API_KEY.
 */
export function createCartesiaTts(settings: ProviderSettings): CartesiaTts {
  const options = parseOptions('cartesia', 'invalid tts options', cartesiaOptionsSchema, settings.options);
  const service = parseOptions(
    'cartesia',
    'invalid service_options.cartesia',
    serviceOptionsSchema,
    settings.serviceOptions,
  );
  const apiKey = requireApiKey(settings, 'cartesia');
  const { baseUrl: base, guard } = vendorEndpoint(settings, 'cartesia', CARTESIA_ORIGIN);

  const extraFields = otherEntries(settings.serviceOptions, ADAPTER_KEYS);
  if (options.speed !== undefined) {
    const generationConfig = isRecord(extraFields.generation_config) ? extraFields.generation_config : {};
    extraFields.generation_config = { ...generationConfig, speed: options.speed };
  }

  return new CartesiaTts({
    guard,
    url: toWebSocketUrl(base) + CARTESIA_WEBSOCKET_PATH,
    apiKey,
    version: service.cartesia_version ?? CARTESIA_VERSION,
    voiceId: options.voice ?? DEFAULT_CARTESIA_VOICE_ID,
    modelId: options.model ?? DEFAULT_CARTESIA_MODEL,
    language: options.language ?? DEFAULT_CARTESIA_LANGUAGE,
    extraFields,
    timeoutMs: service.timeout_ms ?? DEFAULT_VENDOR_TIMEOUT_MS,
    idleCloseMs: IDLE_CLOSE_MS,
  });
}
