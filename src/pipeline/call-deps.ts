import type { AppConfig } from '../config/env.js';
import type { ProviderRegistry } from '../providers/registry.js';
import type { TtsProvider } from '../providers/types.js';
import type { CallVadFactory } from '../vad/call-vad.js';
import type { CallLifecycleDeps } from './call-lifecycle.js';
import type { ToolHandler } from './tool-types.js';
import type { AddressPolicy } from '../security/address-policy.js';
import type { TurnPolicy } from './turn-controller.js';

/** What a bot call needs from the process, whichever engine answers it (the pipeline or speech-to-speech). */
export interface CallSessionDeps extends CallLifecycleDeps {
  registry: ProviderRegistry;
  createVad: CallVadFactory;
  env: AppConfig['env'];
  /** Speaks apologies when the configured TTS cannot (an offline engine). */
  fallbackTts: () => TtsProvider;
  leadMs?: number;
  turnPolicy?: TurnPolicy;
  /** Told what the call says and does as it happens (a room shows it to its participants). */
  events?: CallEvents;
  /** The caller's latest camera frame (base64 JPEG), given to the LLM with each user turn. */
  latestImage?: () => string | undefined;
  /** How long after the end of a caller's turn they must hear something (SWITCHBOARD_TURN_DEADLINE_SECS), ms. */
  turnDeadlineMs?: number;
  /** Where function webhooks may go (the dial-in webhooks' policy); without it `webhook_tools` answer with an error. */
  webhookPolicy?: AddressPolicy;
  /** Answers functions neither webhook nor built in: the room's client, over RTVI. */
  clientTools?: ToolHandler;
}

/** Live happenings of a call, for whoever shows them; each is optional to handle. */
export interface CallEvents {
  onUserSpeaking?(speaking: boolean): void;
  /** Interim (final=false) and final transcripts of the caller. */
  onUserTranscript?(text: string, final: boolean): void;
  /** Each sentence the bot is about to speak. */
  onBotText?(text: string): void;
  /** The bot's audio started going out (true), or finished playing or was cut off (false). */
  onBotSpeaking?(speaking: boolean): void;
  /** From the end of the caller's turn to the first frame of the answer, ms. */
  onTurnLatency?(latencyMs: number): void;
}

/** Lines the bot says on its own. */
export const PHRASES = {
  goodbye: 'We have reached the time limit for this call. Thank you for calling, goodbye!',
  shutdown: 'Sorry, I have to end our call now. Thank you for calling, goodbye!',
  llmFailed: 'Sorry, I had a problem coming up with an answer. Could you say that again?',
  ttsFailed: 'Sorry, I had a problem speaking. Could you say that again?',
  sttFailed: 'Sorry, I cannot hear you right now. Please try calling again later.',
  unavailable: 'Sorry, this assistant is not available right now. Please try again later.',
} as const;
