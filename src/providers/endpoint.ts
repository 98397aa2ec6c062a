import { type ProviderSettings, envKeyName } from './registry.js';
import { ProviderError } from './types.js';

/**
 * Where a vendor lives: `service_options.<provider>.base_url` for one bot, else
 * `SWITCHBOARD_<VENDOR>_URL` for the whole server, else the vendor's public origin. Overrides are
 * http(s) origins (optionally with a path prefix); websocket adapters derive ws(s) from them.
 */
export function vendorBaseUrl(settings: ProviderSettings, vendor: string, defaultOrigin: string): string {
  const perBot = settings.serviceOptions.base_url;
  const fromEnv = settings.env[`SWITCHBOARD_${vendor.toUpperCase()}_URL`];
  const chosen = typeof perBot === 'string' && perBot.length > 0 ? perBot : fromEnv && fromEnv.length > 0 ? fromEnv : defaultOrigin;
  let url: URL;
  try {
    url = new URL(chosen);
  } catch {
    throw new ProviderError(vendor, `endpoint "${chosen}" is not a URL`);
  }
  if (!/^(https?|wss?):$/.test(url.protocol)) throw new ProviderError(vendor, `endpoint "${chosen}" must be http(s) or ws(s)`);
  return chosen.replace(/\/+$/, '');
}

/** `https://x/p` → `wss://x/p`, `http://x/p` → `ws://x/p`; ws(s) stays as it is. */
export function toWebSocketUrl(baseUrl: string): string {
  return baseUrl.replace(/^http/i, 'ws');
}

/** The key for a provider, or a clear error naming where to put it. */
export function requireApiKey(settings: ProviderSettings, provider: string): string {
  if (settings.apiKey && settings.apiKey.length > 0) return settings.apiKey;
  throw new ProviderError(provider, `no API key: set api_keys.${provider} in the bot configuration or ${envKeyName(provider)} on the server`);
}
