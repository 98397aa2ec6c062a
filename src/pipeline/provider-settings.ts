import type { TelephonyConfigBody } from '../bots/bot-config-schema.js';
import { type BotProfile, isSpeechToSpeech } from '../bots/profiles.js';
import type { AppConfig } from '../config/env.js';
import { type ProviderRegistry, type ProviderSettings, envKeyName, vendorOf } from '../providers/registry.js';
import type { S2sProvider } from '../providers/s2s/types.js';
import { ProviderError } from '../providers/types.js';
import { botSettings } from './bot-settings.js';

/**
 * The product's side of the providers: what a bot configuration (its `config` options, api_keys,
 * service_options, profile) gives each adapter. The adapters take these plain settings and know
 * nothing of configurations.
 */

type ConfigBody = Pick<
  TelephonyConfigBody,
  'api_keys' | 'service_options' | 'config' | 'max_duration' | 'services' | 'bot_profile'
>;

/**
 * What the provider `name` is built from: its `config` options, its key (`api_keys.<name>`, then
 * `api_keys.<vendor>` so one Deepgram key serves `deepgram` and `deepgram_tts`, then
 * `<VENDOR>_API_KEY`), and `service_options.<name>` (or `.<vendor>`).
 */
export function providerSettingsFor(
  body: Pick<ConfigBody, 'api_keys' | 'service_options'>,
  name: string,
  options: Record<string, unknown>,
  env: AppConfig['env'],
): ProviderSettings {
  const vendor = vendorOf(name);
  const serviceOptions: Record<string, Record<string, unknown>> = Array.isArray(body.service_options)
    ? Object.assign({}, ...body.service_options)
    : body.service_options;
  return {
    options,
    apiKey: body.api_keys[name] ?? body.api_keys[vendor] ?? env[envKeyName(name)],
    serviceOptions: serviceOptions[name] ?? serviceOptions[vendor] ?? {},
    env,
  };
}

/**
 * Builds each named provider the way a call would, without connecting, and returns what stops
 * one from starting (a missing key, a bad service option, a provider this build lacks), so a
 * configuration is refused when it is written rather than failing on the first call.
 */
export function providerSetupIssues(body: ConfigBody, registry: ProviderRegistry, env: AppConfig['env']): string[] {
  const settings = botSettings(body);
  if (isSpeechToSpeech(body.bot_profile)) {
    const name = body.services.llm;
    if (name === undefined) return [];
    try {
      createS2sProvider(body.bot_profile, name, providerSettingsFor(body, name, settings.llm, env), registry);
      return [];
    } catch (err) {
      return [`services.llm: ${err instanceof Error ? err.message : String(err)}`];
    }
  }
  const issues: string[] = [];
  for (const kind of ['stt', 'llm', 'tts'] as const) {
    const name = body.services[kind];
    if (name === undefined) continue;
    if (!registry.has(kind, name)) {
      issues.push(
        `services.${kind}: "${name}" is not available in this build (available: ${registry.names(kind).join(', ')})`,
      );
      continue;
    }
    const providerSettings = providerSettingsFor(body, name, settings[kind], env);
    try {
      if (kind === 'stt') registry.createStt(name, providerSettings);
      else if (kind === 'llm') registry.createLlm(name, providerSettings);
      else registry.createTts(name, providerSettings);
    } catch (err) {
      issues.push(`services.${kind}: ${err instanceof Error ? err.message : String(err)}`);
    }
  }
  return issues;
}

/**
 * Which `services.llm` names each speech-to-speech profile takes, and the speech-to-speech
 * provider (by its name in the registry) it runs on.
 */
const S2S_PROFILES: Partial<Record<BotProfile, { llmNames: readonly string[]; provider: string }>> = {
  openai_realtime_beta_2024_10: { llmNames: ['openai', 'openai_realtime'], provider: 'openai_realtime' },
  gemini_multimodal_live_2024_12: { llmNames: ['gemini'], provider: 'gemini_live' },
};

/** The speech-to-speech provider of a profile, from the registry; throws a ProviderError naming what is wrong. */
export function createS2sProvider(
  profile: BotProfile,
  llmName: string,
  settings: ProviderSettings,
  registry: ProviderRegistry,
): S2sProvider {
  const entry = S2S_PROFILES[profile];
  if (!entry) throw new ProviderError(llmName, `profile ${profile} is not a speech-to-speech profile`);
  if (!entry.llmNames.includes(llmName)) {
    throw new ProviderError(
      llmName,
      `profile ${profile} runs on services.llm ${entry.llmNames.map((n) => `"${n}"`).join(' or ')}, not "${llmName}"`,
    );
  }
  if (!registry.has('s2s', entry.provider))
    throw new ProviderError(llmName, `the speech-to-speech provider ${entry.provider} is not available in this build`);
  return registry.createS2s(entry.provider, settings);
}
