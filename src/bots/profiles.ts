/** Bot profile ids. Speech-to-speech profiles configure only the LLM. */
export const PIPELINE_PROFILES = [
  'voice_2024_10',
  'voice_2024_08',
  'natural_conversation_2024_11',
  'vision_2024_10',
  'vision_2024_08',
  'telephony_ws_voice_2024_09',
] as const;

export const SPEECH_TO_SPEECH_PROFILES = ['openai_realtime_beta_2024_10', 'gemini_multimodal_live_2024_12'] as const;

export type BotProfile = (typeof PIPELINE_PROFILES)[number] | (typeof SPEECH_TO_SPEECH_PROFILES)[number];

/**
 * Other spellings of the same profiles: the hosted service's older Twilio name, and the spec's
 * placeholder vendor names.
 */
export const PROFILE_ALIASES: Record<string, BotProfile> = {
  twilio_ws_voice_2024_09: 'telephony_ws_voice_2024_09',
  vendorA_multimodal_live_2024_12: 'gemini_multimodal_live_2024_12',
  vendorB_realtime_beta_2024_10: 'openai_realtime_beta_2024_10',
};

/** The profiles as the README documents them, for validation errors; the spec's placeholder names stay unlisted. */
export const DOCUMENTED_PROFILE_NAMES: readonly string[] = [...PIPELINE_PROFILES, ...SPEECH_TO_SPEECH_PROFILES].map(
  (name) => (name === 'telephony_ws_voice_2024_09' ? `${name} (alias twilio_ws_voice_2024_09)` : name),
);

export const ALL_PROFILE_NAMES: readonly string[] = [
  ...PIPELINE_PROFILES,
  ...SPEECH_TO_SPEECH_PROFILES,
  ...Object.keys(PROFILE_ALIASES),
];

export function isSpeechToSpeech(profile: BotProfile): boolean {
  return (SPEECH_TO_SPEECH_PROFILES as readonly string[]).includes(profile);
}
