import type { BotProfile } from '../../bots/profiles.js';
import type { ProviderSettings } from '../registry.js';
import { ProviderError } from '../types.js';
import { createGeminiLive } from './gemini-live/index.js';
import { createOpenAiRealtime } from './openai-realtime/index.js';
import type { S2sProvider } from './types.js';

/** Which `services.llm` names each speech-to-speech profile takes. */
export const S2S_LLM_NAMES: Record<string, readonly string[]> = {
  openai_realtime_beta_2024_10: ['openai', 'openai_realtime'],
  gemini_multimodal_live_2024_12: ['gemini'],
};

/** The speech-to-speech provider of a profile; throws a ProviderError naming what is wrong. */
export function createS2sProvider(profile: BotProfile, llmName: string, settings: ProviderSettings): S2sProvider {
  const names = S2S_LLM_NAMES[profile];
  if (!names) throw new ProviderError(llmName, `profile ${profile} is not a speech-to-speech profile`);
  if (!names.includes(llmName)) {
    throw new ProviderError(llmName, `profile ${profile} runs on services.llm ${names.map((n) => `"${n}"`).join(' or ')}, not "${llmName}"`);
  }
  return profile === 'gemini_multimodal_live_2024_12' ? createGeminiLive(settings) : createOpenAiRealtime(settings);
}
