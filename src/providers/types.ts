import type { Logger } from 'pino';
import type { AudioFormat } from '../audio/audio-format.js';

export interface ProviderContext {
  /** Aborts when the call ends (or, for a reply, when it is interrupted). */
  signal: AbortSignal;
  log: Logger;
}

/** Events from speech-to-text; times are ms of call audio when the vendor gives them. */
export type SttEvent =
  | { type: 'interim'; text: string }
  | {
      type: 'final';
      text: string;
      /** The vendor's endpointing saw the end of the utterance. */
      speechFinal: boolean;
      /**
       * How much of the stream's audio (ms from its first frame) the vendor's final results cover
       * now, when the vendor says: words spoken before this point will not come in a later final.
       */
      coveredToMs?: number;
    }
  | { type: 'speech-started' }
  | { type: 'utterance-end' }
  | { type: 'error'; error: ProviderError };

/** A live transcription stream for one call. Audio is pushed (one 20 ms frame at a time). */
export interface SttStream {
  /**
   * `audio` is lent until the call returns (the caller reuses its buffers, as transports do with
   * frames): the stream copies what it keeps (a replay buffer, a socket's queue).
   */
  write(audio: Uint8Array): void;
  /** Flush what the vendor has buffered and return its final results (end of a user turn). */
  finalize(): void;
  close(): Promise<void>;
}

export interface SttProvider {
  readonly name: string;
  readonly inputFormat: AudioFormat;
  /**
   * Opens the stream when the call arrives, so the first turn does not wait for a handshake.
   * Resolves once the stream can send: audio and Finalize requests from before are the caller's
   * to hold, in order (the call session's SttInput), not the adapter's.
   */
  open(ctx: ProviderContext, onEvent: (event: SttEvent) => void): Promise<SttStream>;
}

/** A function the model asked to call. `argumentsJson` is the model's text as sent, not yet parsed. */
export interface LlmToolCall {
  id: string;
  name: string;
  argumentsJson: string;
  /**
   * Gemini's signature of the reasoning behind the call, opaque: it goes back with the call in
   * every later request (Gemini 3 refuses a function-call turn without it).
   */
  thoughtSignature?: string;
}

export interface LlmMessage {
  /** `tool` carries one function's result, answering an assistant message's `toolCalls`. */
  role: 'system' | 'user' | 'assistant' | 'tool';
  /** For `tool`, the result as JSON text. An assistant message that only calls functions has ''. */
  content: string;
  /** A frame from the caller's camera, for vision profiles (JPEG or PNG, base64). */
  imageBase64?: string;
  /** On an assistant message: the functions it called, in the model's order. */
  toolCalls?: LlmToolCall[];
  /** On a tool message: the call it answers, and that call's function name (Gemini matches by name). */
  toolCallId?: string;
  toolName?: string;
}

export interface LlmRequest {
  messages: LlmMessage[];
  /** Functions offered to the model, in OpenAI's function format; each adapter translates them. */
  tools?: Array<Record<string, unknown>>;
}

/** Text as it streams, or one complete function call (arguments joined); parallel calls come one delta each. */
export type LlmDelta = { type: 'text'; text: string } | ({ type: 'tool-call' } & LlmToolCall);

export interface LlmProvider {
  readonly name: string;
  complete(request: LlmRequest, ctx: ProviderContext): AsyncIterable<LlmDelta>;
}

/**
 * TTS output: audio chunks of any size in the provider's `outputFormat`, and, whenever the adapter
 * knows it, which text the audio so far completes. The latter lets an interrupted reply be cut to
 * the words the caller heard.
 */
export type TtsOutput = { type: 'audio'; audio: Uint8Array } | { type: 'spoken'; text: string };

export interface TtsProvider {
  readonly name: string;
  readonly outputFormat: AudioFormat;
  /**
   * Speaks the text as it streams in (one reply, piece by piece). Aborting ctx.signal stops the
   * vendor's generation.
   */
  synthesize(text: AsyncIterable<string>, ctx: ProviderContext): AsyncIterable<TtsOutput>;
  /**
   * The call has started: open whatever the provider keeps for the call (a websocket) now, so the
   * first reply does not wait for a handshake. Failures surface on the first synthesize().
   */
  warmUp?(log: Logger): void;
  /** The call has ended: close whatever the provider kept open for it. */
  close?(): void;
}

/** An error from a provider. `retryable` tells wrappers whether trying again can help. */
export class ProviderError extends Error {
  override name = 'ProviderError';
  constructor(
    readonly provider: string,
    message: string,
    readonly retryable = false,
    options?: { cause?: unknown },
  ) {
    super(`${provider}: ${message}`, options);
  }
}

export function isAbortError(err: unknown): boolean {
  return err instanceof Error && (err.name === 'AbortError' || (err as { code?: string }).code === 'ABORT_ERR');
}
