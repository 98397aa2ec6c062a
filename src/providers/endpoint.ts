import { Agent as HttpAgent } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import type { LookupFunction } from 'node:net';
import { guardedLookup, literalHostProblem, providerAddressPolicy } from '../security/address-policy.js';
import { type ProviderSettings, envKeyName } from './registry.js';
import { ProviderError } from './types.js';

/** The operator's switch: bots' base_url may point at loopback and private addresses (self-hosted model servers). */
export const PROVIDER_ALLOW_PRIVATE_ENV = 'SWITCHBOARD_PROVIDER_ALLOW_PRIVATE';

/**
 * How connections to an endpoint a bot configuration named are made: the host is resolved through
 * `lookup`, which refuses the name when it resolves to an address the policy forbids, and HTTP
 * keeps its connections in agents of their own, so a request can never reuse a connection that
 * was opened without that check (a customer webhook's, say).
 */
export interface EndpointGuard {
  lookup: LookupFunction;
  httpAgent: HttpAgent;
  httpsAgent: HttpsAgent;
}

export interface VendorEndpoint {
  /** http(s) or ws(s) origin, with any path prefix, without a trailing slash. */
  baseUrl: string;
  /**
   * Set when the endpoint is the bot's own `service_options.<provider>.base_url`; the operator's
   * `SWITCHBOARD_<VENDOR>_URL` and the vendor's public origin are trusted and connect as usual.
   */
  guard: EndpointGuard | undefined;
}

/** One guard per policy, so connections are reused across calls. */
const guards = new Map<boolean, EndpointGuard>();

function endpointGuard(allowPrivate: boolean): EndpointGuard {
  let guard = guards.get(allowPrivate);
  if (!guard) {
    const lookup = guardedLookup(providerAddressPolicy(allowPrivate), 'base_url');
    guard = { lookup, httpAgent: new HttpAgent({ keepAlive: true }), httpsAgent: new HttpsAgent({ keepAlive: true }) };
    guards.set(allowPrivate, guard);
  }
  return guard;
}

/**
 * Where a vendor lives: `service_options.<provider>.base_url` for one bot, else
 * `SWITCHBOARD_<VENDOR>_URL` for the whole server, else the vendor's public origin. Overrides are
 * http(s) origins (optionally with a path prefix); websocket adapters derive ws(s) from them.
 *
 * A bot's base_url receives the bot's API key, so it may not point at link-local or metadata
 * addresses, nor (unless SWITCHBOARD_PROVIDER_ALLOW_PRIVATE=true) at loopback or private ones:
 * literal addresses are refused here, when the configuration is saved and again when a call
 * builds its providers; names are checked when the connection is made (see EndpointGuard).
 */
export function vendorEndpoint(settings: ProviderSettings, vendor: string, defaultOrigin: string): VendorEndpoint {
  const perBot = settings.serviceOptions.base_url;
  const fromEnv = settings.env[`SWITCHBOARD_${vendor.toUpperCase()}_URL`];
  const fromBot = typeof perBot === 'string' && perBot.length > 0;
  const chosen = fromBot ? perBot : fromEnv && fromEnv.length > 0 ? fromEnv : defaultOrigin;
  let url: URL;
  try {
    url = new URL(chosen);
  } catch {
    throw new ProviderError(vendor, `endpoint "${chosen}" is not a URL`);
  }
  if (!/^(https?|wss?):$/.test(url.protocol))
    throw new ProviderError(vendor, `endpoint "${chosen}" must be http(s) or ws(s)`);
  const baseUrl = chosen.replace(/\/+$/, '');
  if (!fromBot) return { baseUrl, guard: undefined };
  const allowPrivate = (settings.env[PROVIDER_ALLOW_PRIVATE_ENV] ?? '').trim() === 'true';
  const problem = literalHostProblem(url, providerAddressPolicy(allowPrivate));
  if (problem) {
    const hint =
      allowPrivate || !/loopback|private/.test(problem)
        ? ''
        : ` (the operator can allow loopback and private addresses with ${PROVIDER_ALLOW_PRIVATE_ENV}=true)`;
    throw new ProviderError(vendor, `service_options.${vendor}.base_url ${problem}${hint}`);
  }
  return { baseUrl, guard: endpointGuard(allowPrivate) };
}

/** `https://x/p` → `wss://x/p`, `http://x/p` → `ws://x/p`; ws(s) stays as it is. */
export function toWebSocketUrl(baseUrl: string): string {
  return baseUrl.replace(/^http/i, 'ws');
}

/** The key for a provider, or a clear error naming where to put it. */
export function requireApiKey(settings: ProviderSettings, provider: string): string {
  if (settings.apiKey && settings.apiKey.length > 0) return settings.apiKey;
  throw new ProviderError(
    provider,
    `no API key: set api_keys.${provider} in the bot configuration or ${envKeyName(provider)} on the server`,
  );
}
