import type { LlmDelta, LlmMessage, LlmProvider, LlmRequest, ProviderContext } from '../../types.js';
import type { EndpointGuard } from '../../endpoint.js';
import { ProviderError } from '../../types.js';
import { isRetryableStatus } from '../../vendor-errors.js';
import { isRetryableErrorType, nonEmptyReply, parseEventData, splitImage, streamSse } from '../llm-http.js';
import { localCallId, pairToolResults } from '../tool-history.js';
import { type ChatMessage, DONE_SENTINEL, type StreamPayload, streamPayload } from './openai-messages.js';

export interface OpenAiLlmConfig {
  /** Registry name (openai, groq, ollama, ...): the prefix of its errors. */
  name: string;
  /** The full chat-completions URL. */
  url: string;
  /** Sent as `Authorization: Bearer`; without one no Authorization header is sent (Ollama, local servers). */
  apiKey: string | undefined;
  model: string;
  temperature?: number;
  maxTokens?: number;
  /** OpenAI itself wants max_completion_tokens (max_tokens is deprecated there); compatible servers know max_tokens. */
  maxTokensField: 'max_tokens' | 'max_completion_tokens';
  timeoutMs: number;
  /** Vendor fields merged into every body (service_options). */
  extraBody: Record<string, unknown>;
  /** Set for a bot's own base_url: connections check the addresses its host resolves to. */
  guard?: EndpointGuard;
}

interface PendingToolCall {
  id?: string;
  name?: string;
  argumentsJson: string;
}

/**
 * Chat Completions with `stream: true`, for OpenAI and every server that speaks its format. Text
 * deltas are yielded as they arrive; tool-call fragments are joined per index and yielded whole
 * when the choice finishes. Tolerates what compatible servers vary on: no role-only first chunk,
 * no usage chunk, missing ids, tool calls delivered in one piece, unknown fields.
 */
export class OpenAiLlm implements LlmProvider {
  readonly name: string;

  constructor(private readonly config: OpenAiLlmConfig) {
    this.name = config.name;
  }

  complete(request: LlmRequest, ctx: ProviderContext): AsyncIterable<LlmDelta> {
    return nonEmptyReply(this.name, this.stream(request, ctx), ctx);
  }

  private async *stream(request: LlmRequest, ctx: ProviderContext): AsyncGenerator<LlmDelta> {
    const config = this.config;
    const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'text/event-stream' };
    if (config.apiKey) headers.authorization = `Bearer ${config.apiKey}`;
    const events = streamSse(
      {
        provider: config.name,
        url: config.url,
        guard: config.guard,
        headers,
        body: this.body(request, ctx),
        timeoutMs: config.timeoutMs,
        secrets: config.apiKey ? [config.apiKey] : [],
      },
      ctx,
    );
    const toolCalls = new Map<number, PendingToolCall>();
    for await (const event of events) {
      if (event.data.trim() === DONE_SENTINEL) break;
      const payload = parseEventData(event.data, streamPayload, ctx, config.name);
      if (!payload) continue;
      for (const delta of this.deltas(payload, toolCalls, ctx)) {
        if (ctx.signal.aborted) return;
        yield delta;
      }
    }
    if (ctx.signal.aborted) return;
    // A server that ends without a finish_reason still delivered its tool calls.
    yield* drainToolCalls(toolCalls, ctx, config.name);
  }

  private body(request: LlmRequest, ctx: ProviderContext): Record<string, unknown> {
    const config = this.config;
    const body: Record<string, unknown> = { model: config.model };
    if (config.temperature !== undefined) body.temperature = config.temperature;
    if (config.maxTokens !== undefined) body[config.maxTokensField] = config.maxTokens;
    if (request.tools && request.tools.length > 0) body.tools = request.tools;
    // Vendor extras may override the options above, never what makes this a streamed chat.
    Object.assign(body, config.extraBody);
    body.messages = toChatMessages(request.messages, ctx, config.name);
    body.stream = true;
    return body;
  }

  private *deltas(
    payload: StreamPayload,
    toolCalls: Map<number, PendingToolCall>,
    ctx: ProviderContext,
  ): Iterable<LlmDelta> {
    if (payload.error) {
      if (typeof payload.error === 'string')
        throw new ProviderError(this.config.name, `error in stream: ${payload.error}`);
      const { message, type, code } = payload.error;
      const kind = type ?? (typeof code === 'string' ? code : undefined);
      const retryable = isRetryableErrorType(kind) || (typeof code === 'number' && isRetryableStatus(code));
      throw new ProviderError(
        this.config.name,
        `error in stream: ${[kind, message].filter(Boolean).join(': ')}`,
        retryable,
      );
    }
    // n is always 1 here, so the first choice is the answer.
    const choice = payload.choices?.find((c) => (c.index ?? 0) === 0);
    if (!choice) return;
    const delta = choice.delta;
    if (delta?.content) yield { type: 'text', text: delta.content };
    delta?.tool_calls?.forEach((fragment, position) => {
      const index = fragment.index ?? position;
      let pending = toolCalls.get(index);
      if (!pending) {
        pending = { argumentsJson: '' };
        toolCalls.set(index, pending);
      }
      if (fragment.id) pending.id = fragment.id;
      if (fragment.function?.name) pending.name = fragment.function.name;
      if (fragment.function?.arguments) pending.argumentsJson += fragment.function.arguments;
    });
    if (choice.finish_reason) {
      ctx.log.debug({ provider: this.config.name, finishReason: choice.finish_reason }, 'llm finished');
      yield* drainToolCalls(toolCalls, ctx, this.config.name);
    }
  }
}

function* drainToolCalls(
  toolCalls: Map<number, PendingToolCall>,
  ctx: ProviderContext,
  provider: string,
): Iterable<LlmDelta> {
  const indexes = [...toolCalls.keys()].sort((a, b) => a - b);
  for (const index of indexes) {
    const call = toolCalls.get(index)!;
    toolCalls.delete(index);
    if (!call.name) {
      ctx.log.debug({ provider, index }, 'skipped a tool call without a name');
      continue;
    }
    yield {
      type: 'tool-call',
      id: call.id ?? localCallId(),
      name: call.name,
      argumentsJson: call.argumentsJson || '{}',
    };
  }
}

/**
 * The conversation in Chat Completions form. System messages stay where they are (role system);
 * an image goes with its text as an `image_url` data URL; an assistant message's function calls
 * become `tool_calls`, each followed by its `tool` message (pairToolResults); empty turns (a reply
 * cut before any words) are dropped because they carry nothing.
 */
export function toChatMessages(messages: LlmMessage[], ctx: ProviderContext, provider: string): ChatMessage[] {
  const out: ChatMessage[] = [];
  for (const message of pairToolResults(messages, ctx, provider)) {
    if (message.role === 'tool') {
      out.push({ role: 'tool', tool_call_id: message.toolCallId!, content: message.content });
      continue;
    }
    const hasText = message.content.trim().length > 0;
    if (message.role === 'assistant' && message.toolCalls && message.toolCalls.length > 0) {
      out.push({
        role: 'assistant',
        content: hasText ? message.content : null,
        tool_calls: message.toolCalls.map((call) => ({
          id: call.id,
          type: 'function' as const,
          function: { name: call.name, arguments: call.argumentsJson },
        })),
      });
      continue;
    }
    const image = message.imageBase64 && message.role === 'user' ? splitImage(message.imageBase64) : undefined;
    if (message.imageBase64 && !image)
      ctx.log.debug({ provider, role: message.role }, 'dropped an image on a non-user message');
    if (!hasText && !image) continue;
    if (image) {
      const imagePart = {
        type: 'image_url' as const,
        image_url: { url: `data:${image.mediaType};base64,${image.data}` },
      };
      out.push({ role: 'user', content: hasText ? [{ type: 'text', text: message.content }, imagePart] : [imagePart] });
    } else {
      out.push({ role: message.role, content: message.content });
    }
  }
  return out;
}
