/**
 * Provider names a bot configuration may use, per service kind. Names follow the hosted service
 * the API comes from, plus `echo` and `flite`, which need no account. Which of these can run a
 * call is decided by the provider registry; this list is what configurations may name.
 */
export const PROVIDER_NAMES = {
  stt: ['deepgram', 'assemblyai', 'gladia'],
  llm: ['echo', 'openai', 'anthropic', 'gemini', 'together', 'groq', 'grok', 'custom_llm', 'ollama', 'openai_realtime'],
  tts: [
    'flite',
    'cartesia',
    'elevenlabs',
    'deepgram_tts',
    'openai_tts',
    'azure_tts',
    'aws_tts',
    'google_tts',
    'playht',
    'rime',
  ],
} as const;

export type ServiceKind = keyof typeof PROVIDER_NAMES;
