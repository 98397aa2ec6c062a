import { z } from 'zod';
import { requireApiKey, toWebSocketUrl, vendorEndpoint } from '../../endpoint.js';
import type { ProviderSettings } from '../../registry.js';
import { DEFAULT_VENDOR_TIMEOUT_MS, parseOptions } from '../../vendor-options.js';
import { OpenAiRealtime } from './openai-realtime.js';

export { OpenAiRealtime, type OpenAiRealtimeConfig } from './openai-realtime.js';

export const OPENAI_ORIGIN = 'https://api.openai.com';
export const REALTIME_PATH = '/v1/realtime';
export const DEFAULT_REALTIME_MODEL = { ga: 'gpt-realtime', beta: 'gpt-4o-realtime-preview-2024-10-01' } as const;
export const DEFAULT_REALTIME_VOICE = { ga: 'marin', beta: 'alloy' } as const;

const serviceOptionsSchema = z.looseObject({
  base_url: z.string().optional(),
  /** `ga` (the current protocol, default) or `beta` (OpenAI-Beta: realtime=v1). */
  protocol: z.enum(['ga', 'beta']).optional(),
  timeout_ms: z.coerce.number().int().min(100).max(60_000).optional(),
  /** Merged into session.update, e.g. `{"turn_detection": {"type": "semantic_vad"}}`. */
  session: z.record(z.string(), z.unknown()).optional(),
});

/**
 * The OpenAI speech-to-speech profile (`services.llm` = `openai` or `openai_realtime`). Endpoint:
 * service_options.<name>.base_url, else SWITCHBOARD_OPENAI_URL, else https://api.openai.com;
 * key: api_keys.<name>, api_keys.openai, or OPENAI_API_KEY. `config` llm options: model, voice.
 */
export function createOpenAiRealtime(settings: ProviderSettings): OpenAiRealtime {
  const service = parseOptions(
    'openai_realtime',
    'invalid service options',
    serviceOptionsSchema,
    settings.serviceOptions,
  );
  const protocol = service.protocol ?? 'ga';
  const model = typeof settings.options.model === 'string' ? settings.options.model : DEFAULT_REALTIME_MODEL[protocol];
  const voice = typeof settings.options.voice === 'string' ? settings.options.voice : DEFAULT_REALTIME_VOICE[protocol];
  const endpoint = vendorEndpoint(settings, 'openai', OPENAI_ORIGIN);
  const base = endpoint.baseUrl.replace(/\/v1$/, '');
  return new OpenAiRealtime({
    guard: endpoint.guard,
    url: `${toWebSocketUrl(base)}${REALTIME_PATH}`,
    apiKey: requireApiKey(settings, 'openai'),
    protocol,
    model,
    voice,
    handshakeTimeoutMs: service.timeout_ms ?? DEFAULT_VENDOR_TIMEOUT_MS,
    sessionExtras: service.session ?? {},
  });
}
