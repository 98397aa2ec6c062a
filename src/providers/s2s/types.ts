import type { LlmMessage, LlmToolCall, ProviderContext, ProviderError } from '../types.js';

/**
 * A speech-to-speech model (OpenAI Realtime, Gemini Live) replaces STT, LLM and TTS for a call:
 * caller audio in, the bot's audio and transcripts out. The call session keeps Playout, marks,
 * barge-in and the call's lifecycle; the adapter speaks the vendor's protocol and formats.
 */
export interface S2sOptions {
  /** System instructions and earlier turns, from `initial_messages`. */
  history: LlmMessage[];
  /** The bot speaks first (`run_on_config`). */
  greet: boolean;
  model?: string;
  voice?: string;
  /** Functions offered to the model, in OpenAI's function format; each adapter translates them. */
  tools?: Array<Record<string, unknown>>;
}

export interface S2sEvents {
  /** Bot audio as 8 kHz mu-law, any length, for the response item `itemId`. */
  onAudio(itemId: string, mulaw: Uint8Array): void;
  /** The response item has no more audio. */
  onItemDone(itemId: string): void;
  /** The vendor heard the caller start speaking: barge-in if the bot is talking. */
  onSpeechStarted(): void;
  onUserTranscript(text: string): void;
  onBotTranscript(itemId: string, text: string): void;
  /** The model asked to call a function: once per complete call (arguments joined). */
  onToolCall(call: LlmToolCall): void;
  /** The session is lost for good (after any reconnection the adapter attempts). */
  onError(error: ProviderError): void;
}

export interface S2sSession {
  /** One 20 ms frame of the caller, 8 kHz mu-law; the adapter converts if its vendor needs to. */
  sendAudio(mulaw: Uint8Array): void;
  /** A turn the caller keyed rather than spoke (DTMF): the model answers it. */
  sendText(text: string): void;
  /**
   * The caller interrupted item `itemId` after hearing `heardMs` of it: cancel what is still being
   * generated and make the vendor's context hold only what was heard.
   */
  interrupt(itemId: string, heardMs: number): void;
  /**
   * The results of the model's function calls, handed back together: the model answers once, after
   * all of them (OpenAI Realtime: one function_call_output item each, then one response.create;
   * Gemini Live: one toolResponse holding every functionResponse).
   */
  sendToolResults(results: Array<{ call: LlmToolCall; resultJson: string }>): void;
  /**
   * Messages added to the model's context without asking it to answer (a streaming webhook's
   * `llm:append_to_messages`): text of the system, the caller or the bot.
   */
  appendMessages(messages: LlmMessage[]): void;
  close(): Promise<void>;
}

export interface S2sProvider {
  readonly name: string;
  open(ctx: ProviderContext, options: S2sOptions, events: S2sEvents): Promise<S2sSession>;
}
