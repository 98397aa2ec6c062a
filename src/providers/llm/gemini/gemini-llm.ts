import type { LlmDelta, LlmMessage, LlmProvider, LlmRequest, ProviderContext } from '../../types.js';
import type { EndpointGuard } from '../../endpoint.js';
import { ProviderError } from '../../types.js';
import { isRetryableStatus } from '../../vendor-errors.js';
import {
  CALL_START_TURN,
  endpointUrl,
  isRetryableErrorType,
  nonEmptyReply,
  parseEventData,
  splitImage,
  streamSse,
} from '../llm-http.js';
import { LOCAL_CALL_ID_PREFIX, argumentsObject, localCallId, pairToolResults, resultObject } from '../tool-history.js';
import { toGeminiTools } from '../../tool-schemas.js';
import { type Content, type Part, functionCallPart, generateContentResponse, textPart } from './gemini-messages.js';

/** Finish reasons that mean the model's answer was withheld, not merely ended. */
const BLOCKING_FINISH_REASONS = new Set([
  'SAFETY',
  'RECITATION',
  'BLOCKLIST',
  'PROHIBITED_CONTENT',
  'SPII',
  'IMAGE_SAFETY',
]);

export interface GeminiLlmConfig {
  /** The origin (plus any path prefix) before /v1beta. */
  baseUrl: string;
  apiKey: string;
  model: string;
  temperature?: number;
  maxTokens?: number;
  timeoutMs: number;
  /** Vendor fields merged into every body (service_options); a `generationConfig` object is merged into ours. */
  extraBody: Record<string, unknown>;
  /** Set for a bot's own base_url: connections check the addresses its host resolves to. */
  guard?: EndpointGuard;
}

/**
 * Gemini text generation over REST: `streamGenerateContent?alt=sse` (see gemini-messages.ts for
 * the source). Each event is a GenerateContentResponse; its text parts are yielded as they come,
 * and function calls (which Gemini sends whole, never in fragments) as tool calls.
 */
export class GeminiLlm implements LlmProvider {
  readonly name = 'gemini';

  constructor(private readonly config: GeminiLlmConfig) {}

  /** The streaming URL for the configured model (`models/x` and `x` both work). */
  get url(): string {
    const model = this.config.model.replace(/^models\//, '');
    return endpointUrl(
      this.config.baseUrl,
      `/v1beta/models/${encodeURIComponent(model)}:streamGenerateContent?alt=sse`,
    );
  }

  complete(request: LlmRequest, ctx: ProviderContext): AsyncIterable<LlmDelta> {
    return nonEmptyReply(this.name, this.stream(request, ctx), ctx);
  }

  private async *stream(request: LlmRequest, ctx: ProviderContext): AsyncGenerator<LlmDelta> {
    const config = this.config;
    const events = streamSse(
      {
        provider: this.name,
        url: this.url,
        guard: config.guard,
        headers: { 'content-type': 'application/json', accept: 'text/event-stream', 'x-goog-api-key': config.apiKey },
        body: this.body(request, ctx),
        timeoutMs: config.timeoutMs,
        secrets: [config.apiKey],
      },
      ctx,
    );
    let yielded = false;
    for await (const event of events) {
      const response = parseEventData(event.data, generateContentResponse, ctx, this.name);
      if (!response) continue;
      if (response.error) {
        const { code, status, message } = response.error;
        const retryable = (code !== undefined && isRetryableStatus(code)) || isRetryableErrorType(status);
        throw new ProviderError(
          this.name,
          `error in stream: ${[status, message].filter(Boolean).join(': ')}`,
          retryable,
        );
      }
      const blockReason = response.promptFeedback?.blockReason;
      if (blockReason) throw new ProviderError(this.name, `the prompt was blocked: ${blockReason}`);
      const candidate = response.candidates?.[0];
      for (const raw of candidate?.content?.parts ?? []) {
        if (ctx.signal.aborted) return;
        const call = functionCallPart.safeParse(raw);
        if (call.success) {
          const fn = call.data.functionCall;
          yielded = true;
          yield {
            type: 'tool-call',
            id: fn.id ?? localCallId(),
            name: fn.name,
            argumentsJson: JSON.stringify(fn.args ?? {}),
            ...(call.data.thoughtSignature ? { thoughtSignature: call.data.thoughtSignature } : {}),
          };
          continue;
        }
        const text = textPart.safeParse(raw);
        // Thought summaries are not spoken.
        if (text.success && !text.data.thought && text.data.text) {
          yielded = true;
          yield { type: 'text', text: text.data.text };
        } else if (!text.success) {
          ctx.log.debug({ provider: this.name, keys: Object.keys(raw) }, 'skipped an unknown part');
        }
      }
      const finishReason = candidate?.finishReason;
      if (finishReason) {
        ctx.log.debug({ provider: this.name, finishReason }, 'llm finished');
        // A reply withheld by Google's filters would otherwise be silence on the line.
        if (!yielded && BLOCKING_FINISH_REASONS.has(finishReason))
          throw new ProviderError(this.name, `the reply was blocked: ${finishReason}`);
      }
    }
  }

  private body(request: LlmRequest, ctx: ProviderContext): Record<string, unknown> {
    const config = this.config;
    const { systemInstruction, contents } = toGeminiContents(request.messages, ctx);
    const { generationConfig: extraGeneration, ...extras } = config.extraBody;
    const generation: Record<string, unknown> = {};
    if (config.temperature !== undefined) generation.temperature = config.temperature;
    if (config.maxTokens !== undefined) generation.maxOutputTokens = config.maxTokens;
    if (extraGeneration && typeof extraGeneration === 'object') Object.assign(generation, extraGeneration);
    const body: Record<string, unknown> = {};
    if (request.tools && request.tools.length > 0) body.tools = toGeminiTools(request.tools);
    if (Object.keys(generation).length > 0) body.generationConfig = generation;
    Object.assign(body, extras);
    if (systemInstruction) body.systemInstruction = systemInstruction;
    body.contents = contents;
    return body;
  }
}

/**
 * The conversation as Gemini wants it: system messages joined into `systemInstruction`;
 * assistant → `model`; consecutive turns of one role merged into one content (Gemini wants user
 * and model to alternate); a user turn first (CALL_START_TURN) when the bot spoke first or nobody
 * has; images as `inlineData` parts before their text; an assistant's function calls as
 * `functionCall` parts (each with the thought signature it came with), answered by
 * `functionResponse` parts (matched by name, one per call) that open the next user turn; empty
 * turns dropped.
 */
export function toGeminiContents(
  messages: LlmMessage[],
  ctx?: ProviderContext,
): { systemInstruction: Content | undefined; contents: Content[] } {
  const systemParts: string[] = [];
  const contents: Content[] = [];
  for (const message of pairToolResults(messages, ctx, 'gemini')) {
    if (message.role === 'system') {
      if (message.content.trim()) systemParts.push(message.content);
      continue;
    }
    const role = message.role === 'assistant' ? 'model' : 'user';
    const parts: Part[] = [];
    if (message.role === 'tool') {
      parts.push({
        functionResponse: {
          name: message.toolName ?? '',
          response: resultObject(message.content),
          ...vendorId(message.toolCallId),
        },
      });
    } else if (message.imageBase64) {
      if (role === 'user') {
        const image = splitImage(message.imageBase64);
        parts.push({ inlineData: { mimeType: image.mediaType, data: image.data } });
      } else {
        ctx?.log.debug({ provider: 'gemini', role: message.role }, 'dropped an image on a non-user message');
      }
    }
    if (message.role !== 'tool' && message.content.trim()) parts.push({ text: message.content });
    if (message.role === 'assistant')
      for (const call of message.toolCalls ?? [])
        parts.push({
          functionCall: { name: call.name, args: argumentsObject(call), ...vendorId(call.id) },
          ...(call.thoughtSignature ? { thoughtSignature: call.thoughtSignature } : {}),
        });
    if (parts.length === 0) continue;
    const last = contents.at(-1);
    if (last && last.role === role) {
      // Responses answer the model turn before: they go ahead of text already in this user turn.
      if (message.role === 'tool') last.parts.splice(firstNonResponse(last.parts), 0, ...parts);
      else last.parts.push(...parts);
    } else contents.push({ role, parts });
  }
  if (contents[0]?.role !== 'user') contents.unshift({ role: 'user', parts: [{ text: CALL_START_TURN }] });
  return {
    systemInstruction: systemParts.length > 0 ? { parts: [{ text: systemParts.join('\n\n') }] } : undefined,
    contents,
  };
}

/** Gemini's own call id goes back with the call and its response; an id made up here does not. */
function vendorId(id: string | undefined): { id?: string } {
  return id && !id.startsWith(LOCAL_CALL_ID_PREFIX) ? { id } : {};
}

function firstNonResponse(parts: Part[]): number {
  const index = parts.findIndex((part) => !('functionResponse' in part));
  return index < 0 ? parts.length : index;
}
