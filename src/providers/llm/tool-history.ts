import { randomUUID } from 'node:crypto';
import type { LlmMessage, LlmToolCall, ProviderContext } from '../types.js';

/**
 * Every vendor wants a function's result right after the model turn that called it: OpenAI
 * refuses an assistant `tool_calls` message not followed by one `tool` message per id ("tool_calls
 * must be followed by tool messages"), Anthropic a `tool_use` whose `tool_result` is not in the
 * next user message, Gemini a function-call turn not answered by the next turn. A call's result
 * may reach the conversation late (the caller spoke while the tool ran), so the adapters put each
 * result where the vendor wants it before translating: results move up to follow their call, in
 * the model's order; a call with no result anywhere is answered with an explicit error; a result
 * whose call is not in the history is dropped (the vendor would refuse it).
 */
export function pairToolResults(
  messages: LlmMessage[],
  ctx: ProviderContext | undefined,
  provider: string,
): LlmMessage[] {
  const results = new Map<string, LlmMessage>();
  const calledIds = new Set<string>();
  for (const message of messages) {
    if (message.role === 'tool' && message.toolCallId && !results.has(message.toolCallId))
      results.set(message.toolCallId, message);
    for (const call of message.role === 'assistant' ? (message.toolCalls ?? []) : []) calledIds.add(call.id);
  }
  const out: LlmMessage[] = [];
  for (const message of messages) {
    if (message.role === 'tool') {
      if (!message.toolCallId || !calledIds.has(message.toolCallId))
        ctx?.log.debug({ provider, toolCallId: message.toolCallId }, 'dropped a tool result without its call');
      continue;
    }
    out.push(message);
    if (message.role !== 'assistant' || !message.toolCalls) continue;
    for (const call of message.toolCalls) {
      const result = results.get(call.id);
      if (result) {
        out.push({ ...result, toolName: result.toolName ?? call.name });
        results.delete(call.id);
      } else {
        ctx?.log.debug({ provider, toolCallId: call.id }, 'answered a tool call that has no result');
        out.push({ role: 'tool', toolCallId: call.id, toolName: call.name, content: MISSING_RESULT_JSON });
      }
    }
  }
  return out;
}

/** The result a call gets when the conversation holds none (it cannot be left unanswered). */
export const MISSING_RESULT_JSON = JSON.stringify({ error: 'The function returned no result.' });

/** Prefix of the ids made up here for vendors that send calls without one (Gemini, some compatible servers). */
export const LOCAL_CALL_ID_PREFIX = 'sbcall_';

/** A unique id for a call the vendor sent without one: unique across the call, since calls are made once per id. */
export function localCallId(): string {
  return `${LOCAL_CALL_ID_PREFIX}${randomUUID().replaceAll('-', '').slice(0, 24)}`;
}

/**
 * A call's arguments as an object, for vendors that want one (Anthropic `input`, Gemini `args`):
 * the model's text parsed; anything that is not a JSON object becomes `{}` (the vendor would
 * refuse it, and the model's own text still reached the function).
 */
export function argumentsObject(call: LlmToolCall): Record<string, unknown> {
  try {
    const parsed: unknown = JSON.parse(call.argumentsJson);
    if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) return parsed as Record<string, unknown>;
  } catch {
    // fall through
  }
  return {};
}

/** A result as an object, for Gemini's `response` (a Struct): an object as it is, anything else under `result`. */
export function resultObject(resultJson: string): Record<string, unknown> {
  try {
    const parsed: unknown = JSON.parse(resultJson);
    if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) return parsed as Record<string, unknown>;
    return { result: parsed };
  } catch {
    return { result: resultJson };
  }
}
