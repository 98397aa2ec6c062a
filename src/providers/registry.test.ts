import { describe, expect, it } from 'vitest';
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
});
