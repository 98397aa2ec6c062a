import { describe, expect, it } from 'vitest';
import { ProviderRegistry } from '../providers/registry.js';
import { createGeminiLive, createOpenAiRealtime } from '../providers/s2s/index.js';
import { createS2sProvider, providerSettingsFor } from './provider-settings.js';

describe('provider settings from a bot configuration', () => {
  it('takes the key from api_keys by name, then by vendor, then from the environment', () => {
    const env = { DEEPGRAM_API_KEY: 'from-env' } as never;
    const byName = providerSettingsFor(
      { api_keys: { deepgram_tts: 'a', deepgram: 'b' }, service_options: {} },
      'deepgram_tts',
      {},
      env,
    );
    expect(byName.apiKey).toBe('a');
    const byVendor = providerSettingsFor({ api_keys: { deepgram: 'b' }, service_options: {} }, 'deepgram_tts', {}, env);
    expect(byVendor.apiKey).toBe('b');
    const fromEnv = providerSettingsFor(
      { api_keys: {}, service_options: [{ deepgram: { keyterm: 'x' } }] },
      'deepgram_tts',
      {},
      env,
    );
    expect(fromEnv.apiKey).toBe('from-env');
    expect(fromEnv.serviceOptions).toEqual({ keyterm: 'x' });
  });

  it('runs each speech-to-speech profile on its own services.llm names only', () => {
    const settings = providerSettingsFor(
      { api_keys: { openai: 'sk-test', gemini: 'g-test' }, service_options: {} },
      'openai',
      {},
      {},
    );
    const registry = new ProviderRegistry()
      .registerS2s('openai_realtime', createOpenAiRealtime)
      .registerS2s('gemini_live', createGeminiLive);
    expect(createS2sProvider('openai_realtime_beta_2024_10', 'openai', settings, registry).name).toBe(
      'openai_realtime',
    );
    expect(
      createS2sProvider('gemini_multimodal_live_2024_12', 'gemini', { ...settings, apiKey: 'g-test' }, registry).name,
    ).toBe('gemini_live');
    expect(() => createS2sProvider('gemini_multimodal_live_2024_12', 'openai', settings, registry)).toThrow(
      /runs on services.llm "gemini", not "openai"/,
    );
    expect(() => createS2sProvider('telephony_ws_voice_2024_09', 'openai', settings, registry)).toThrow(
      /not a speech-to-speech profile/,
    );
    expect(() => createS2sProvider('openai_realtime_beta_2024_10', 'openai', settings, new ProviderRegistry())).toThrow(
      /openai_realtime is not available in this build/,
    );
  });
});
