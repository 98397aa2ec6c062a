import { z } from 'zod';
import { requireApiKey, toWebSocketUrl, vendorEndpoint } from '../../endpoint.js';
import type { ProviderSettings } from '../../registry.js';
import { DEFAULT_VENDOR_TIMEOUT_MS, parseOptions } from '../../vendor-options.js';
import { GeminiLive } from './gemini-live.js';

export { GeminiLive, type GeminiLiveConfig } from './gemini-live.js';

export const GEMINI_ORIGIN = 'https://generativelanguage.googleapis.com';
export const LIVE_PATH = '/ws/google.ai.generativelanguage.v1beta.GenerativeService.BidiGenerateContent';
export const DEFAULT_LIVE_MODEL = 'gemini-2.5-flash-native-audio-preview-12-2025';
export const DEFAULT_LIVE_VOICE = 'Puck';

const serviceOptionsSchema = z.looseObject({
  base_url: z.string().optional(),
  timeout_ms: z.coerce.number().int().min(100).max(60_000).optional(),
});

/**
 * The Gemini speech-to-speech profile (`services.llm` = `gemini`). Endpoint:
 * service_options.gemini.base_url, else SWITCHBOARD_GEMINI_URL, else Google's; key: api_keys.gemini
 * or GEMINI_API_KEY. `config` llm options: model, voice, language.
 */
export function createGeminiLive(settings: ProviderSettings): GeminiLive {
  const service = parseOptions('gemini_live', 'invalid service options', serviceOptionsSchema, settings.serviceOptions);
  const { baseUrl: base, guard } = vendorEndpoint(settings, 'gemini', GEMINI_ORIGIN);
  const option = (name: string) =>
    typeof settings.options[name] === 'string' ? (settings.options[name] as string) : undefined;
  return new GeminiLive({
    guard,
    url: `${toWebSocketUrl(base)}${LIVE_PATH}`,
    apiKey: requireApiKey(settings, 'gemini'),
    model: option('model') ?? DEFAULT_LIVE_MODEL,
    voice: option('voice') ?? DEFAULT_LIVE_VOICE,
    language: option('language'),
    handshakeTimeoutMs: service.timeout_ms ?? DEFAULT_VENDOR_TIMEOUT_MS,
  });
}
