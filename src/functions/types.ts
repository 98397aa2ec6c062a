import type { LlmMessage, LlmToolCall } from '../providers/types.js';

/** What a function call came to, handed to the model as the function's result. */
export interface ToolCallResult {
  /** JSON text handed to the model as the function's result (an error result is JSON too). */
  resultJson: string;
  outcome: 'ok' | 'error' | 'timeout' | 'cancelled';
}

/** Actions a streaming webhook asks for, in order, before its result. */
export type ToolAction =
  /** SSE action `tts:say`: speak this now, while the function goes on. */
  | { type: 'say'; text: string }
  /** SSE action `llm:append_to_messages`: add these to the conversation. */
  | { type: 'append'; messages: LlmMessage[] }
  /** SSE action `call:end`: end the call once the bot has finished speaking. */
  | { type: 'end_call' };

export interface ToolRunOptions {
  /** Aborting it (an interruption, when the tool cancels on one; the call's end) cancels the request. */
  signal: AbortSignal;
  /** The whole request, a streamed answer included; past it the result is a timed-out error. */
  timeoutMs: number;
  onAction(action: ToolAction): void;
}

export interface WebhookToolRunner {
  /** Calls the tool's URL; never throws: failures become error results. */
  run(call: LlmToolCall, options: ToolRunOptions): Promise<ToolCallResult>;
}
