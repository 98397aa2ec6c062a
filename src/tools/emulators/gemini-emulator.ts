import { randomBytes } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import {
  type GeminiErrorBody,
  type GenerateContentRequest,
  functionCallPart,
  functionResponsePart,
  generateContentRequest,
} from '../../providers/llm/gemini/gemini-messages.js';
import {
  type AcceptedRequest,
  type EmulatedToolResult,
  LlmEmulatorBase,
  type LlmEmulatorOptions,
  type Rejection,
  type ResolvedReply,
  type StreamStep,
  approxTokens,
  describeZodIssues,
} from './llm-emulator-base.js';

export interface GeminiEmulatorOptions extends LlmEmulatorOptions {
  /** Claim only paths under this prefix (default: every /v1beta/models/…:(stream)generateContent path). */
  pathPrefix?: string;
}

interface AcceptedGenerate extends AcceptedRequest {
  /** streamGenerateContent without alt=sse answers with one JSON array of all chunks. */
  method: 'stream-sse' | 'stream-array' | 'unary';
  responseId: string;
  /** A thinking model's signature for this answer's first function call. */
  thoughtSignature: string | undefined;
}

/**
 * Models that sign their function calls and refuse a function-call turn sent back without its
 * signature: Gemini 3 (ai.google.dev/gemini-api/docs/thought-signatures; 2.5 signs only with
 * thinking on and does not check, so it is not played here).
 */
const SIGNING_MODEL = /^gemini-3/;
/** Google's documented value for a function call that no Gemini model made (history from elsewhere). */
const SKIP_SIGNATURE_CHECK = 'skip_thought_signature_validator';
/** Signatures remembered for checking; older ones read as corrupted, as a signature from another key would. */
const MAX_ISSUED_SIGNATURES = 10_000;

const STATUS_NAMES: Record<number, string> = {
  400: 'INVALID_ARGUMENT',
  401: 'UNAUTHENTICATED',
  403: 'PERMISSION_DENIED',
  404: 'NOT_FOUND',
  405: 'INVALID_ARGUMENT',
  413: 'INVALID_ARGUMENT',
  429: 'RESOURCE_EXHAUSTED',
  500: 'INTERNAL',
  503: 'UNAVAILABLE',
  504: 'DEADLINE_EXCEEDED',
};

const PATH = /\/v1beta\/models\/([^/:]+):(streamGenerateContent|generateContent)$/;

/**
 * A Gemini text API server (REST, from Google's public docs; docs/providers.md section 9): `POST …/v1beta/models/{model}:streamGenerateContent?alt=sse` streams one
 * GenerateContentResponse per `data:` event (CRLF-framed, no event names, no [DONE]), the last
 * one carrying finishReason and usageMetadata; function calls arrive whole in one event. Without
 * alt=sse the same chunks come as one JSON array; `:generateContent` gives one response.
 *
 * Auth as Google answers it: the key in `x-goog-api-key` (or `?key=`); none → 403
 * PERMISSION_DENIED, a wrong one → 400 INVALID_ARGUMENT (API_KEY_INVALID). Requests must start
 * with a user turn and alternate user/model; the in-stream failure is an `error` object
 * (503 UNAVAILABLE, "overloaded").
 */
export class GeminiEmulator extends LlmEmulatorBase<AcceptedGenerate> {
  readonly vendor = 'gemini';
  private readonly pathPrefix: string;
  private sequence = 0;
  private readonly issuedSignatures = new Set<string>();

  constructor(options: GeminiEmulatorOptions = {}) {
    super(options);
    this.pathPrefix = (options.pathPrefix ?? '').replace(/\/+$/, '');
  }

  protected claims(url: URL): boolean {
    return url.pathname.startsWith(`${this.pathPrefix}/`) && PATH.test(url.pathname);
  }

  protected override recordedPath(url: URL): string {
    const copy = new URL(url);
    if (copy.searchParams.has('key')) copy.searchParams.set('key', '[redacted]');
    return decodeURIComponent(copy.pathname + copy.search);
  }

  protected authenticate(req: IncomingMessage, url: URL): Rejection | undefined {
    const header = req.headers['x-goog-api-key'];
    const key = (typeof header === 'string' && header) || url.searchParams.get('key') || undefined;
    if (!key) {
      return {
        status: 403,
        body: errorBody(
          403,
          "Method doesn't allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API.",
        ),
      };
    }
    if (this.expectedKey !== undefined && key !== this.expectedKey) {
      const body = errorBody(400, 'API key not valid. Please pass a valid API key.');
      body.error.details = [
        { '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'API_KEY_INVALID', domain: 'googleapis.com' },
      ];
      return { status: 400, body };
    }
    return undefined;
  }

  protected accept(body: unknown, url: URL): AcceptedGenerate | Rejection {
    const parsed = generateContentRequest.safeParse(body);
    if (!parsed.success)
      return {
        status: 400,
        body: errorBody(400, `Invalid JSON payload received. ${describeZodIssues(parsed.error.issues)}`),
      };
    const request = parsed.data;
    const match = PATH.exec(url.pathname)!;
    const model = decodeURIComponent(match[1]!);
    const signing = SIGNING_MODEL.test(model);
    const orderProblem =
      alternationProblem(request) ??
      functionTurnProblem(request) ??
      (signing ? this.signatureProblem(request) : undefined);
    if (orderProblem) return { status: 400, body: errorBody(400, orderProblem) };
    const streaming = match[2] === 'streamGenerateContent';
    const method = !streaming ? 'unary' : url.searchParams.get('alt') === 'sse' ? 'stream-sse' : 'stream-array';
    this.sequence += 1;
    return {
      model,
      stream: method === 'stream-sse',
      method,
      lastUserText: lastUserText(request),
      promptChars: JSON.stringify(request.contents).length + JSON.stringify(request.systemInstruction ?? '').length,
      toolResults: trailingToolResults(request),
      responseId: `emu-response-${this.sequence}`,
      thoughtSignature: signing ? this.issueSignature() : undefined,
    };
  }

  private issueSignature(): string {
    const signature = randomBytes(48).toString('base64');
    this.issuedSignatures.add(signature);
    if (this.issuedSignatures.size > MAX_ISSUED_SIGNATURES)
      this.issuedSignatures.delete(this.issuedSignatures.values().next().value!);
    return signature;
  }

  /**
   * Gemini 3's check, with its messages: in the current turn (the model contents after the last
   * user content that is more than function responses) the first function call of each model
   * content must carry the signature it was sent with; earlier turns are not checked.
   */
  private signatureProblem(request: GenerateContentRequest): string | undefined {
    const contents = request.contents;
    let start = 0;
    for (let i = contents.length - 1; i >= 0; i -= 1) {
      const content = contents[i]!;
      if (
        (content.role ?? 'user') === 'user' &&
        content.parts.some((p) => !functionResponsePart.safeParse(p).success)
      ) {
        start = i + 1;
        break;
      }
    }
    for (let i = start; i < contents.length; i += 1) {
      const content = contents[i]!;
      if (content.role !== 'model') continue;
      const first = content.parts.map((p) => functionCallPart.safeParse(p)).find((p) => p.success);
      if (!first?.success) continue;
      const signature = first.data.thoughtSignature;
      if (signature === undefined)
        return `Function call is missing a thought_signature in functionCall parts. This is required for tools to work correctly, and missing thought_signature may lead to degraded model performance. Additional data, function call \`default_api:${first.data.functionCall.name}\` , position ${i + 1}. Please refer to https://ai.google.dev/gemini-api/docs/thought-signatures for more details.`;
      if (signature !== SKIP_SIGNATURE_CHECK && !this.issuedSignatures.has(signature))
        return 'Corrupted thought signature.';
    }
    return undefined;
  }

  protected errorBody(status: number, message: string): GeminiErrorBody {
    return errorBody(status, message);
  }

  protected streamSteps(reply: ResolvedReply, request: AcceptedGenerate): StreamStep[] {
    return this.chunks(reply, request).map((chunk) => ({ frame: frame(chunk), token: true }));
  }

  protected errorFrame(): string {
    return frame(errorBody(503, 'The model is overloaded. Please try again later.'));
  }

  protected override malformedFrame(): string {
    return 'data: {"candidates": [{"content": \r\n\r\n';
  }

  protected wholeResponse(reply: ResolvedReply, request: AcceptedGenerate): unknown {
    const chunks = this.chunks(reply, request);
    if (request.method === 'stream-array') return chunks;
    // generateContent: the same answer in one response.
    const text = reply.tokens.join('');
    const parts = [...(text ? [{ text }] : []), ...functionCalls(reply, request)];
    return {
      ...chunks.at(-1)!,
      candidates: [
        {
          content: { parts: parts.length > 0 ? parts : [{ text: '' }], role: 'model' },
          finishReason: 'STOP',
          index: 0,
        },
      ],
    };
  }

  /** One response per token, function calls together in one more, finishReason and usage on the last. */
  private chunks(reply: ResolvedReply, request: AcceptedGenerate): Array<Record<string, unknown>> {
    const candidate = (parts: unknown[]) =>
      ({ content: { parts, role: 'model' }, index: 0 }) as Record<string, unknown>;
    const candidates = reply.tokens.map((token) => candidate([{ text: token }]));
    if (reply.toolCalls.length > 0) candidates.push(candidate(functionCalls(reply, request)));
    if (candidates.length === 0) candidates.push(candidate([{ text: '' }]));
    candidates.at(-1)!.finishReason = 'STOP';
    const promptTokens = approxTokens(request.promptChars);
    const outputTokens = reply.tokens.length + reply.toolCalls.length;
    return candidates.map((c, index) => ({
      candidates: [c],
      usageMetadata:
        index === candidates.length - 1
          ? {
              promptTokenCount: promptTokens,
              candidatesTokenCount: outputTokens,
              totalTokenCount: promptTokens + outputTokens,
            }
          : { promptTokenCount: promptTokens, totalTokenCount: promptTokens },
      modelVersion: request.model,
      responseId: request.responseId,
    }));
  }
}

/** The reply's calls as parts; a thinking model signs the first (parallel calls share its signature). */
function functionCalls(reply: ResolvedReply, request: AcceptedGenerate): Array<Record<string, unknown>> {
  return reply.toolCalls.map((call, index) => ({
    functionCall: { name: call.name, args: JSON.parse(call.argumentsJson) as unknown },
    ...(index === 0 && request.thoughtSignature ? { thoughtSignature: request.thoughtSignature } : {}),
  }));
}

function frame(payload: unknown): string {
  return `data: ${JSON.stringify(payload)}\r\n\r\n`;
}

function errorBody(code: number, message: string): GeminiErrorBody {
  return { error: { code, message, status: STATUS_NAMES[code] ?? (code >= 500 ? 'INTERNAL' : 'FAILED_PRECONDITION') } };
}

function alternationProblem(request: GenerateContentRequest): string | undefined {
  const roles = request.contents.map((c) => c.role ?? 'user');
  if (roles[0] !== 'user') return 'Please ensure that multiturn requests start with a user turn.';
  for (let i = 1; i < roles.length; i += 1) {
    if (roles[i] === roles[i - 1]) return 'Please ensure that multiturn requests alternate between user and model.';
  }
  return undefined;
}

function lastUserText(request: GenerateContentRequest): string | undefined {
  for (let i = request.contents.length - 1; i >= 0; i -= 1) {
    const content = request.contents[i]!;
    if ((content.role ?? 'user') !== 'user') continue;
    return content.parts
      .map((p) => ('text' in p && typeof p.text === 'string' ? p.text : ''))
      .filter(Boolean)
      .join(' ');
  }
  return undefined;
}

type Parts = GenerateContentRequest['contents'][number]['parts'];

function callsOf(parts: Parts): string[] {
  return parts.flatMap((p) => {
    const call = functionCallPart.safeParse(p);
    return call.success ? [call.data.functionCall.name] : [];
  });
}

function responsesOf(parts: Parts): Array<{ name: string; response: Record<string, unknown> }> {
  return parts.flatMap((p) => {
    const response = functionResponsePart.safeParse(p);
    return response.success ? [response.data.functionResponse] : [];
  });
}

/**
 * Gemini's rules for function turns, with its messages: a function-call turn comes right after a
 * user turn or a function-response turn; a function-response turn comes right after a
 * function-call turn and answers each of its calls (one response part per call, names matching).
 */
function functionTurnProblem(request: GenerateContentRequest): string | undefined {
  const contents = request.contents;
  for (let i = 0; i < contents.length; i += 1) {
    const parts = contents[i]!.parts;
    const responses = responsesOf(parts);
    const previousCalls = i > 0 ? callsOf(contents[i - 1]!.parts) : [];
    if (responses.length > 0) {
      if (previousCalls.length === 0)
        return 'Please ensure that function response turn comes immediately after a function call turn.';
      if (responses.length !== previousCalls.length)
        return 'Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn.';
      const unmatched = responses.find((r) => !previousCalls.includes(r.name));
      if (unmatched)
        return `Please ensure that the function response name "${unmatched.name}" matches a function call of the function call turn.`;
    } else if (previousCalls.length > 0) {
      return 'Please ensure that function response turn comes immediately after a function call turn.';
    }
  }
  return undefined;
}

/** The functionResponse parts of the last content. */
function trailingToolResults(request: GenerateContentRequest): EmulatedToolResult[] {
  const last = request.contents.at(-1);
  if (!last || (last.role ?? 'user') !== 'user') return [];
  return responsesOf(last.parts).map((r) => ({ name: r.name, callId: undefined, content: JSON.stringify(r.response) }));
}
