/** The speech-to-speech adapters; which bot profile runs on which is the product's choice (pipeline/provider-settings.ts). */
export { createGeminiLive, GeminiLive, type GeminiLiveConfig } from './gemini-live/index.js';
export { createOpenAiRealtime, OpenAiRealtime, type OpenAiRealtimeConfig } from './openai-realtime/index.js';
export type { S2sEvents, S2sOptions, S2sProvider, S2sSession } from './types.js';
