import { type EventSourceMessage, createParser } from 'eventsource-parser';
import { z } from 'zod';
import type { ProviderSettings } from '../registry.js';
import { type LlmDelta, type ProviderContext, ProviderError } from '../types.js';
import type { EndpointGuard } from '../endpoint.js';
import { TimedFetch } from '../timed-fetch.js';
import { DEFAULT_VENDOR_TIMEOUT_MS, baseServiceOptionsSchema, otherEntries, parseOptions } from '../vendor-options.js';
import { isRetryableStatus, knownVendorErrorText, oneLine, redact } from '../vendor-errors.js';

/**
 * What the HTTP LLM adapters (OpenAI-compatible, Anthropic, Gemini) share: option parsing, the
 * streaming POST with its timeouts and error mapping, and a few message-mapping helpers. Each
 * vendor folder keeps its own wire schemas and event handling.
 */

/** An SSE event larger than this is not an LLM delta: stop rather than buffer without bound. */
const MAX_SSE_BUFFER_CHARS = 8 * 1024 * 1024;

/**
 * The user turn put first when a conversation has none before the bot's first words (the bot
 * speaks first). Anthropic requires the first message to be a user one; Gemini wants the same.
 */
export const CALL_START_TURN = '(The call has connected.)';

/** `config` options every HTTP LLM reads; bot-config-schema.ts has already checked their ranges. */
export const llmOptionsSchema = z.object({
  model: z.string().min(1).optional(),
  temperature: z.number().min(0).max(2).optional(),
  max_tokens: z.number().int().min(1).optional(),
});

/** `service_options.<provider>` keys the adapter itself reads (base_url, timeout_ms); all others go into the request body. */
const ADAPTER_KEYS: ReadonlySet<string> = new Set(Object.keys(baseServiceOptionsSchema.shape));

/** Parses a provider's `config` options; a wrong type becomes a clear, non-retryable error. */
export function parseLlmOptions<S extends z.ZodType>(
  provider: string,
  schema: S,
  options: Record<string, unknown>,
): z.infer<S> {
  return parseOptions(provider, 'invalid llm options', schema, options);
}

export interface LlmServiceOptions {
  timeoutMs: number;
  /** Vendor fields (service_options minus base_url and timeout_ms) merged into every request body. */
  extraBody: Record<string, unknown>;
}

export function parseLlmServiceOptions(provider: string, settings: ProviderSettings): LlmServiceOptions {
  const service = parseOptions(
    provider,
    `invalid service_options.${provider}`,
    baseServiceOptionsSchema,
    settings.serviceOptions,
  );
  return {
    timeoutMs: service.timeout_ms ?? DEFAULT_VENDOR_TIMEOUT_MS,
    extraBody: otherEntries(settings.serviceOptions, ADAPTER_KEYS),
  };
}

/**
 * `base` + a versioned path, without doubling the version when the base already ends with it:
 * `http://host:8000/v1` and `http://host:8000` both give `http://host:8000/v1/chat/completions`.
 */
export function endpointUrl(base: string, versionedPath: string): string {
  const version = /^\/v[^/]+/.exec(versionedPath)?.[0];
  const trimmed = base.replace(/\/+$/, '');
  if (version && trimmed.endsWith(version)) return trimmed + versionedPath.slice(version.length);
  return trimmed + versionedPath;
}

/** An image for a vendor's image part: its media type and bare base64 (a data URL is accepted too). */
export function splitImage(imageBase64: string): { mediaType: string; data: string } {
  const dataUrl = /^data:([^;,]+);base64,(.*)$/s.exec(imageBase64);
  if (dataUrl) return { mediaType: dataUrl[1]!, data: dataUrl[2]! };
  // Vision frames come as JPEG or PNG; the first bytes tell which (in base64 form).
  if (imageBase64.startsWith('iVBOR')) return { mediaType: 'image/png', data: imageBase64 };
  if (imageBase64.startsWith('R0lGOD')) return { mediaType: 'image/gif', data: imageBase64 };
  if (imageBase64.startsWith('UklGR')) return { mediaType: 'image/webp', data: imageBase64 };
  return { mediaType: 'image/jpeg', data: imageBase64 };
}

export { openAiToolFunction } from '../tool-schemas.js';

/**
 * Parses one SSE event's JSON with a vendor schema. Anything malformed is logged at debug (shape
 * only: event data may hold the completion) and skipped, so one bad chunk never ends a reply.
 */
export function parseEventData<S extends z.ZodType>(
  data: string,
  schema: S,
  ctx: ProviderContext,
  provider: string,
): z.infer<S> | undefined {
  let json: unknown;
  try {
    json = JSON.parse(data);
  } catch {
    ctx.log.debug({ provider, chars: data.length }, 'skipped a stream event that is not JSON');
    return undefined;
  }
  const parsed = schema.safeParse(json);
  if (!parsed.success) {
    ctx.log.debug(
      { provider, issues: parsed.error.issues.map((issue) => issue.path.join('.')) },
      'skipped a stream event of unexpected shape',
    );
    return undefined;
  }
  return parsed.data;
}

/**
 * An adapter's deltas, passed through; a stream that ends without a single one (no events, or
 * none the adapter could read) fails. A 200 that says nothing is a failed request, not a silent
 * reply: the call apologises and counts it. Retryable, as a glitch may pass.
 */
export async function* nonEmptyReply(
  provider: string,
  deltas: AsyncIterable<LlmDelta>,
  ctx: ProviderContext,
): AsyncGenerator<LlmDelta, void, undefined> {
  let any = false;
  for await (const delta of deltas) {
    any = true;
    yield delta;
  }
  if (!any && !ctx.signal.aborted) {
    throw new ProviderError(
      provider,
      'empty reply: the stream ended without any text or tool call it could read',
      true,
    );
  }
}

/** Error types vendors use for failures that may pass (overload, rate limits, server trouble). */
export function isRetryableErrorType(type: string | undefined): boolean {
  return (
    type !== undefined && /overload|rate|server|api_error|internal|unavailable|timeout|deadline|exhausted/i.test(type)
  );
}

export interface SseRequest {
  /** Registry name, the prefix of every error message. */
  provider: string;
  url: string;
  headers: Record<string, string>;
  body: unknown;
  /** Silence allowed before the headers, before the first bytes and between chunks. */
  timeoutMs: number;
  /** Values that must never appear in an error message (the key, in case a vendor echoes it). */
  secrets: string[];
  /** Set for a bot's own base_url: the connection checks the addresses its host resolves to. */
  guard?: EndpointGuard;
}

/**
 * POSTs a JSON body and yields the response's server-sent events as they arrive.
 *
 * - Aborting ctx.signal (barge-in, hang-up) ends the iteration quietly, and the connection is
 *   closed, which is how these vendors are cancelled. Leaving the loop early closes it too.
 * - Silence longer than timeoutMs (no headers, no first bytes, a stall mid-stream) throws a
 *   retryable ProviderError. The clock runs only while waiting on the network, not while the
 *   consumer holds an event.
 * - HTTP errors throw a ProviderError with the status and the vendor's error text; 408, 409, 429
 *   and 5xx are retryable, network failures too.
 */
export async function* streamSse(
  request: SseRequest,
  ctx: ProviderContext,
): AsyncGenerator<EventSourceMessage, void, undefined> {
  const { provider } = request;
  const post = new TimedFetch({ ...request, body: JSON.stringify(request.body) }, ctx.signal);
  const startedMs = performance.now();
  let eventCount = 0;
  try {
    const response = await post.response();
    if (!response) return;
    ctx.log.debug(
      { provider, status: response.status, headersMs: Math.round(performance.now() - startedMs) },
      'llm response started',
    );

    if (!response.ok || isJson(response)) {
      const text = await post.errorBody(response);
      if (text === undefined) return;
      const vendorText = knownVendorErrorText(text);
      if (!response.ok) {
        const message = redact(vendorText ?? oneLine(text), request.secrets) || response.statusText;
        throw new ProviderError(provider, `HTTP ${response.status}: ${message}`, isRetryableStatus(response.status));
      }
      // Some compatible servers answer a streaming request with one JSON document: an error, or
      // a whole completion (stream ignored), whose text must not end up in an error message.
      const detail = vendorText ? `: ${redact(vendorText, request.secrets)}` : '';
      throw new ProviderError(provider, `expected an event stream, got a JSON document${detail}`);
    }

    const queue: EventSourceMessage[] = [];
    let parseFailure: string | undefined;
    const parser = createParser({
      onEvent: (event) => queue.push(event),
      onError: (error) => {
        if (error.type === 'max-buffer-size-exceeded') parseFailure = 'an event exceeded the size limit';
      },
      maxBufferSize: MAX_SSE_BUFFER_CHARS,
    });
    const decoder = new TextDecoder();
    for (;;) {
      const chunk = await post.read(response, () => (eventCount === 0 ? 'no events within' : 'stream stalled for'));
      if (!chunk) return;
      if (chunk.done) {
        // A last event without its blank line still counts (a truncated one fails its JSON parse).
        parser.feed(`${decoder.decode()}\n\n`);
      } else {
        parser.feed(decoder.decode(chunk.value, { stream: true }));
      }
      if (parseFailure) throw new ProviderError(provider, `unreadable event stream: ${parseFailure}`, true);
      while (queue.length > 0) {
        if (ctx.signal.aborted) return;
        eventCount += 1;
        yield queue.shift()!;
      }
      if (chunk.done) return;
    }
  } finally {
    // Closes the connection when the consumer stopped early; a no-op after a complete response.
    post.close();
    ctx.log.debug(
      { provider, events: eventCount, elapsedMs: Math.round(performance.now() - startedMs) },
      'llm stream closed',
    );
  }
}

function isJson(response: Response): boolean {
  return (response.headers.get('content-type') ?? '').toLowerCase().includes('application/json');
}
