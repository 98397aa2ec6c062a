import { type EventSourceMessage, createParser } from 'eventsource-parser';
import { z } from 'zod';
import type { LlmMessage } from '../providers/types.js';
import type { ToolAction } from './types.js';

/**
 * A streaming webhook's answer (`streaming: true`) is Server-Sent Events:
 *
 *   event: action
 *   data: {"action": "tts:say", "arguments": {"text": "Let me look."}}
 *
 *   event: result
 *   data: {"available": true}
 *
 * Actions, carried out in order as they arrive: `tts:say` {text}, `llm:append_to_messages`
 * {messages: [{role, content}]}, `call:end` {}. RTVI's spelling is read too, since the hosted API's
 * receivers send it: `{"service": "tts", "action": "say", "arguments": [{"name": "text", "value": …}]}`,
 * and `end_call` or RTVI's `hangup` for `call:end`. The `result` event's data is the function's
 * result (any JSON); an `error` event's data is an error result. Unknown actions and events are
 * reported to `onIgnored` and skipped.
 */

const rtviArgument = z.object({ name: z.string(), value: z.unknown() });
const actionEvent = z.looseObject({
  action: z.string().min(1),
  service: z.string().optional(),
  arguments: z.union([z.record(z.string(), z.unknown()), z.array(rtviArgument)]).optional(),
});
const appendedMessage = z.looseObject({
  role: z.enum(['system', 'developer', 'user', 'assistant']),
  content: z.union([z.string(), z.array(z.looseObject({ type: z.string(), text: z.string().optional() }))]),
});

/** What one SSE event of a streaming webhook means. */
export type StreamItem =
  | { kind: 'action'; action: ToolAction }
  | { kind: 'result'; resultJson: string }
  | { kind: 'error'; resultJson: string }
  | { kind: 'ignored'; reason: string };

/** Reads one SSE event. */
export function readStreamEvent(event: EventSourceMessage): StreamItem {
  const name = event.event ?? 'message';
  let data: unknown;
  try {
    data = JSON.parse(event.data);
  } catch {
    return { kind: 'ignored', reason: `event "${name}" whose data is not JSON` };
  }
  if (name === 'result') return { kind: 'result', resultJson: JSON.stringify(data) };
  if (name === 'error') return { kind: 'error', resultJson: JSON.stringify({ error: data }) };
  if (name !== 'action' && name !== 'message') return { kind: 'ignored', reason: `unknown event "${name}"` };
  const parsed = actionEvent.safeParse(data);
  if (!parsed.success) return { kind: 'ignored', reason: `event "${name}" that is not an action` };
  return readAction(parsed.data);
}

function readAction(event: z.infer<typeof actionEvent>): StreamItem {
  const name = event.action.includes(':') || !event.service ? event.action : `${event.service}:${event.action}`;
  const args = Array.isArray(event.arguments)
    ? Object.fromEntries(event.arguments.map((a) => [a.name, a.value]))
    : (event.arguments ?? {});
  switch (name) {
    case 'tts:say': {
      const text = typeof args.text === 'string' ? args.text.trim() : '';
      if (!text) return { kind: 'ignored', reason: 'tts:say without text' };
      return { kind: 'action', action: { type: 'say', text } };
    }
    case 'llm:append_to_messages': {
      const messages = z.array(appendedMessage).min(1).max(50).safeParse(args.messages);
      if (!messages.success) return { kind: 'ignored', reason: 'llm:append_to_messages without valid messages' };
      return { kind: 'action', action: { type: 'append', messages: messages.data.map(toLlmMessage) } };
    }
    case 'call:end':
    case 'end_call':
    case 'rtvi:hangup':
    case 'hangup':
      return { kind: 'action', action: { type: 'end_call' } };
    default:
      return { kind: 'ignored', reason: `unknown action "${name}"` };
  }
}

function toLlmMessage(message: z.infer<typeof appendedMessage>): LlmMessage {
  const content =
    typeof message.content === 'string' ? message.content : message.content.map((part) => part.text ?? '').join('');
  return { role: message.role === 'developer' ? 'system' : message.role, content };
}

/** Feeds text to an SSE parser and hands back each event read; `maxEventChars` bounds one event. */
export function sseReader(maxEventChars: number, onEvent: (event: EventSourceMessage) => void, onTooLarge: () => void) {
  const parser = createParser({
    onEvent,
    onError: (error) => {
      if (error.type === 'max-buffer-size-exceeded') onTooLarge();
    },
    maxBufferSize: maxEventChars,
  });
  const decoder = new TextDecoder();
  return {
    push(chunk: Uint8Array): void {
      parser.feed(decoder.decode(chunk, { stream: true }));
    },
    end(): void {
      parser.feed(`${decoder.decode()}\n\n`);
    },
  };
}
