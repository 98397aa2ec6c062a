import { describe, expect, it } from 'vitest';
import { providerSettingsFor } from './provider-settings.js';
import { envKeyName, vendorOf } from './registry.js';

describe('provider names', () => {
  it('maps each provider to its vendor and key variable', () => {
    expect(vendorOf('deepgram_tts')).toBe('deepgram');
    expect(vendorOf('openai_tts')).toBe('openai');
    expect(vendorOf('openai_realtime')).toBe('openai');
    expect(vendorOf('custom_llm')).toBe('custom_llm');
    expect(envKeyName('deepgram_tts')).toBe('DEEPGRAM_API_KEY');
    expect(envKeyName('custom_llm')).toBe('CUSTOM_LLM_API_KEY');
    expect(envKeyName('elevenlabs')).toBe('ELEVENLABS_API_KEY');
  });

  it('takes the key from api_keys by name, then by vendor, then from the environment', () => {
    const env = { DEEPGRAM_API_KEY: 'from-env' } as never;
    const byName = providerSettingsFor({ api_keys: { deepgram_tts: 'a', deepgram: 'b' }, service_options: {} }, 'deepgram_tts', {}, env);
    expect(byName.apiKey).toBe('a');
    const byVendor = providerSettingsFor({ api_keys: { deepgram: 'b' }, service_options: {} }, 'deepgram_tts', {}, env);
    expect(byVendor.apiKey).toBe('b');
    const fromEnv = providerSettingsFor({ api_keys: {}, service_options: [{ deepgram: { keyterm: 'x' } }] }, 'deepgram_tts', {}, env);
    expect(fromEnv.apiKey).toBe('from-env');
    expect(fromEnv.serviceOptions).toEqual({ keyterm: 'x' });
  });
});
