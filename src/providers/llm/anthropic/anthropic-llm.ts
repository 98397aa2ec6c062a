import type { z } from 'zod';
import type { EndpointGuard } from '../../endpoint.js';
import type { LlmDelta, LlmMessage, LlmProvider, LlmRequest, ProviderContext } from '../../types.js';
import { ProviderError } from '../../types.js';
import {
  CALL_START_TURN,
  isRetryableErrorType,
  openAiToolFunction,
  nonEmptyReply,
  parseEventData,
  splitImage,
  streamSse,
} from '../llm-http.js';
import {
  ANTHROPIC_VERSION,
  type ContentBlock,
  type Message,
  contentBlockDelta,
  contentBlockStart,
  contentBlockStop,
  errorEvent,
  messageDelta,
  streamEvent,
} from './anthropic-messages.js';
import { argumentsObject, pairToolResults } from '../tool-history.js';

export const MESSAGES_PATH = '/v1/messages';

export interface AnthropicLlmConfig {
  /** The full messages URL. */
  url: string;
  apiKey: string;
  model: string;
  /** Required by the API. */
  maxTokens: number;
  /** 0-1 on this API (OpenAI's go to 2). */
  temperature?: number;
  timeoutMs: number;
  /** Vendor fields merged into every body (service_options). */
  extraBody: Record<string, unknown>;
  /** Set for a bot's own base_url: connections check the addresses its host resolves to. */
  guard?: EndpointGuard;
}

interface PendingToolUse {
  id: string;
  name: string;
  json: string;
  /** Some servers put the whole input in content_block_start instead of streaming it. */
  initialInput: Record<string, unknown> | undefined;
}

/**
 * Anthropic Messages with `stream: true`. Text deltas are yielded as they arrive; a tool_use
 * block's input_json_delta pieces are joined and yielded as one tool call at content_block_stop.
 */
export class AnthropicLlm implements LlmProvider {
  readonly name = 'anthropic';

  constructor(private readonly config: AnthropicLlmConfig) {}

  complete(request: LlmRequest, ctx: ProviderContext): AsyncIterable<LlmDelta> {
    return nonEmptyReply(this.name, this.stream(request, ctx), ctx);
  }

  private async *stream(request: LlmRequest, ctx: ProviderContext): AsyncGenerator<LlmDelta> {
    const config = this.config;
    const events = streamSse(
      {
        provider: this.name,
        url: config.url,
        guard: config.guard,
        headers: {
          'content-type': 'application/json',
          accept: 'text/event-stream',
          'x-api-key': config.apiKey,
          'anthropic-version': ANTHROPIC_VERSION,
        },
        body: this.body(request, ctx),
        timeoutMs: config.timeoutMs,
        secrets: [config.apiKey],
      },
      ctx,
    );
    const toolUses = new Map<number, PendingToolUse>();
    for await (const event of events) {
      const base = parseEventData(event.data, streamEvent, ctx, this.name);
      if (!base) continue;
      switch (base.type) {
        case 'content_block_start': {
          const start = this.shape(contentBlockStart, base, ctx);
          const block = start?.content_block;
          if (block?.type === 'tool_use' && block.id && block.name) {
            toolUses.set(start!.index, { id: block.id, name: block.name, json: '', initialInput: block.input });
          }
          break;
        }
        case 'content_block_delta': {
          const delta = this.shape(contentBlockDelta, base, ctx);
          if (!delta) break;
          if (delta.delta.type === 'text_delta') {
            if (ctx.signal.aborted) return;
            if (delta.delta.text) yield { type: 'text', text: delta.delta.text };
          } else if (delta.delta.type === 'input_json_delta') {
            const pending = toolUses.get(delta.index);
            if (pending) pending.json += delta.delta.partial_json;
          }
          break;
        }
        case 'content_block_stop': {
          const stop = this.shape(contentBlockStop, base, ctx);
          const pending = stop ? toolUses.get(stop.index) : undefined;
          if (!pending) break;
          toolUses.delete(stop!.index);
          if (ctx.signal.aborted) return;
          yield { type: 'tool-call', id: pending.id, name: pending.name, argumentsJson: toolArguments(pending) };
          break;
        }
        case 'message_delta':
          ctx.log.debug(
            { provider: this.name, stopReason: this.shape(messageDelta, base, ctx)?.delta.stop_reason },
            'llm finished',
          );
          break;
        case 'message_stop':
          return;
        case 'error': {
          const error = this.shape(errorEvent, base, ctx)?.error;
          throw new ProviderError(
            this.name,
            `error in stream: ${error ? `${error.type}: ${error.message}` : 'unknown error'}`,
            isRetryableErrorType(error?.type),
          );
        }
        case 'message_start':
        case 'ping':
          break;
        default:
          ctx.log.debug({ provider: this.name, eventType: base.type }, 'skipped an unknown stream event');
      }
    }
    if (!ctx.signal.aborted) ctx.log.debug({ provider: this.name }, 'llm stream ended without message_stop');
  }

  private shape<S extends z.ZodType>(schema: S, value: unknown, ctx: ProviderContext): z.infer<S> | undefined {
    const parsed = schema.safeParse(value);
    if (parsed.success) return parsed.data;
    ctx.log.debug(
      { provider: this.name, issues: parsed.error.issues.map((issue) => issue.path.join('.')) },
      'skipped a stream event of unexpected shape',
    );
    return undefined;
  }

  private body(request: LlmRequest, ctx: ProviderContext): Record<string, unknown> {
    const config = this.config;
    const { system, messages } = toAnthropicMessages(request.messages, ctx);
    const body: Record<string, unknown> = { model: config.model, max_tokens: config.maxTokens };
    if (config.temperature !== undefined) body.temperature = config.temperature;
    if (request.tools && request.tools.length > 0) body.tools = request.tools.map(toAnthropicTool);
    // Vendor extras may override the options above, never the conversation or streaming.
    Object.assign(body, config.extraBody);
    if (system) body.system = system;
    body.messages = messages;
    body.stream = true;
    return body;
  }
}

function toolArguments(pending: PendingToolUse): string {
  if (pending.json.length > 0) return pending.json;
  return JSON.stringify(pending.initialInput ?? {});
}

/** OpenAI-shaped tools become `{name, description, input_schema}`; others are taken as Anthropic's own. */
function toAnthropicTool(tool: Record<string, unknown>): Record<string, unknown> {
  const fn = openAiToolFunction(tool);
  if (!fn) return tool;
  return {
    name: fn.name,
    ...(fn.description ? { description: fn.description } : {}),
    input_schema: fn.parameters ?? { type: 'object', properties: {} },
  };
}

/**
 * The conversation as the Messages API wants it: system messages joined into the top-level
 * `system`; consecutive messages of one role merged (the API wants user and assistant to
 * alternate); a user turn first (CALL_START_TURN) when the bot spoke first or nobody has spoken;
 * images as base64 image blocks before their text; an assistant's function calls as `tool_use`
 * blocks after its text, and their results as `tool_result` blocks opening the next user turn
 * (the API wants them there, before any text); empty turns dropped (empty text is refused).
 */
export function toAnthropicMessages(
  messages: LlmMessage[],
  ctx?: ProviderContext,
): { system: string | undefined; messages: Message[] } {
  const systemParts: string[] = [];
  const turns: Array<{ role: 'user' | 'assistant'; blocks: ContentBlock[] }> = [];
  for (const message of pairToolResults(messages, ctx, 'anthropic')) {
    if (message.role === 'system') {
      if (message.content.trim()) systemParts.push(message.content);
      continue;
    }
    const role = message.role === 'tool' ? 'user' : message.role;
    const blocks: ContentBlock[] = [];
    if (message.role === 'tool') {
      blocks.push({ type: 'tool_result', tool_use_id: message.toolCallId!, content: message.content });
    } else if (message.imageBase64) {
      if (message.role === 'user') {
        const image = splitImage(message.imageBase64);
        // A data URL of another type is sent as it is; the API's 400 then names the problem.
        const mediaType = image.mediaType as 'image/jpeg' | 'image/png' | 'image/gif' | 'image/webp';
        blocks.push({ type: 'image', source: { type: 'base64', media_type: mediaType, data: image.data } });
      } else {
        ctx?.log.debug({ provider: 'anthropic', role: message.role }, 'dropped an image on a non-user message');
      }
    }
    if (message.role !== 'tool' && message.content.trim()) blocks.push({ type: 'text', text: message.content });
    if (message.role === 'assistant')
      for (const call of message.toolCalls ?? [])
        blocks.push({ type: 'tool_use', id: call.id, name: call.name, input: argumentsObject(call) });
    if (blocks.length === 0) continue;
    const last = turns.at(-1);
    if (last && last.role === role) {
      // Results answer the turn before: they go ahead of text already in this user turn.
      if (message.role === 'tool') last.blocks.splice(firstNonResult(last.blocks), 0, ...blocks);
      else last.blocks.push(...blocks);
    } else turns.push({ role, blocks });
  }
  if (turns[0]?.role !== 'user') turns.unshift({ role: 'user', blocks: [{ type: 'text', text: CALL_START_TURN }] });
  return {
    system: systemParts.length > 0 ? systemParts.join('\n\n') : undefined,
    messages: turns.map(({ role, blocks }) => ({ role, content: asContent(blocks) })),
  };
}

function firstNonResult(blocks: ContentBlock[]): number {
  const index = blocks.findIndex((block) => block.type !== 'tool_result');
  return index < 0 ? blocks.length : index;
}

/** Text-only turns as one string (merged turns joined by a newline); anything else as blocks. */
function asContent(blocks: ContentBlock[]): Message['content'] {
  if (blocks.every((block) => block.type === 'text')) return blocks.map((block) => block.text).join('\n');
  return blocks;
}
