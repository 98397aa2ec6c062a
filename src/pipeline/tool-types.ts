import type { LlmMessage, LlmToolCall } from '../providers/types.js';

/**
 * What the call needs from whoever answers a function call: a webhook runner (functions/), a
 * built-in (end_call, transfer_call, send_dtmf) or the room's client over RTVI. The shapes are the
 * webhook runner's, so a runner is a ToolHandler as it is.
 */

/** A function's result for the model, and how it came about. */
export interface ToolCallResult {
  /** JSON text handed to the model as the function's result (an error result is JSON too). */
  resultJson: string;
  outcome: 'ok' | 'error' | 'timeout' | 'cancelled';
}

/** Actions a streaming webhook asks for while it runs, in order, before its result. */
export type ToolAction =
  | { type: 'say'; text: string }
  | { type: 'append'; messages: LlmMessage[] }
  | { type: 'end_call' };

export interface ToolRunOptions {
  /** Aborted when the call ends, or when the caller interrupts a tool that cancels on interruption. */
  signal: AbortSignal;
  timeoutMs: number;
  onAction(action: ToolAction): void;
}

export interface ToolHandler {
  /** Never throws: a failure is an error result. */
  run(call: LlmToolCall, options: ToolRunOptions): Promise<ToolCallResult>;
}

/** A result saying why a function gave no answer, as JSON the model can explain to the caller. */
export function errorResult(outcome: Exclude<ToolCallResult['outcome'], 'ok'>, message: string): ToolCallResult {
  return { outcome, resultJson: JSON.stringify({ error: message }) };
}
