import type { IncomingMessage } from 'node:http';
import {
  type ChatCompletionRequest,
  type ChatMessage,
  type OpenAiErrorBody,
  chatCompletionRequest,
} from '../../providers/llm/openai/openai-messages.js';
import {
  type AcceptedRequest,
  type EmulatedToolResult,
  LlmEmulatorBase,
  type LlmEmulatorOptions,
  type Rejection,
  type ResolvedReply,
  type StreamStep,
  approxTokens,
  bearerToken,
  describeZodIssues,
  fragments,
} from './llm-emulator-base.js';

export interface OpenAiEmulatorOptions extends LlmEmulatorOptions {
  /**
   * Whether a bearer key is required (default true, like OpenAI, Groq, Together, xAI). Set false
   * to stand in for Ollama or a local server, which take requests without one.
   */
  requireKey?: boolean;
  /**
   * Claim only paths under this prefix (default: every path ending in /chat/completions), so one
   * server can host several differently configured compatible vendors, e.g. `/ollama`.
   */
  pathPrefix?: string;
}

interface AcceptedChat extends AcceptedRequest {
  includeUsage: boolean;
  id: string;
  createdSecs: number;
}

/**
 * An OpenAI Chat Completions server (docs/providers.md section 2): `POST …/v1/chat/completions`,
 * streamed as `data:` lines only (no event names), a role-only first chunk, content deltas,
 * tool-call fragments split by index, a finish chunk, the usage chunk when
 * `stream_options.include_usage` is set, then `data: [DONE]`. Non-streaming requests get one
 * `chat.completion` document. Serves as any OpenAI-compatible vendor (groq, together, grok,
 * ollama, custom_llm) too: point SWITCHBOARD_<NAME>_URL at it.
 */
export class OpenAiEmulator extends LlmEmulatorBase<AcceptedChat> {
  readonly vendor = 'openai';
  private readonly requireKey: boolean;
  private readonly pathPrefix: string;
  private sequence = 0;

  constructor(options: OpenAiEmulatorOptions = {}) {
    super(options);
    this.requireKey = options.requireKey ?? true;
    this.pathPrefix = (options.pathPrefix ?? '').replace(/\/+$/, '');
  }

  protected claims(url: URL): boolean {
    return url.pathname.startsWith(`${this.pathPrefix}/`) && url.pathname.endsWith('/chat/completions');
  }

  protected authenticate(req: IncomingMessage): Rejection | undefined {
    const key = bearerToken(req);
    if (key === undefined) {
      if (!this.requireKey && req.headers.authorization === undefined) return undefined;
      return {
        status: 401,
        body: errorBody(
          "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).",
          'invalid_request_error',
        ),
      };
    }
    if (this.expectedKey !== undefined && key !== this.expectedKey) {
      // OpenAI shows only the key's ends; the emulator shows none of it.
      return {
        status: 401,
        body: errorBody('Incorrect API key provided.', 'invalid_request_error', 'invalid_api_key'),
      };
    }
    return undefined;
  }

  protected accept(body: unknown): AcceptedChat | Rejection {
    const parsed = chatCompletionRequest.safeParse(body);
    if (!parsed.success) {
      const param = parsed.error.issues[0]?.path.map(String).join('.') ?? null;
      return {
        status: 400,
        body: errorBody(describeZodIssues(parsed.error.issues), 'invalid_request_error', null, param || null),
      };
    }
    const request = parsed.data;
    const toolProblem = toolMessageProblem(request);
    if (toolProblem)
      return { status: 400, body: errorBody(toolProblem.message, 'invalid_request_error', null, toolProblem.param) };
    this.sequence += 1;
    return {
      model: request.model,
      stream: request.stream === true,
      lastUserText: lastUserText(request),
      promptChars: JSON.stringify(request.messages).length,
      toolResults: trailingToolResults(request),
      includeUsage: request.stream_options?.include_usage === true,
      id: `chatcmpl-emu${this.sequence}`,
      createdSecs: Math.floor(Date.now() / 1000),
    };
  }

  protected errorBody(status: number, message: string): OpenAiErrorBody {
    const type =
      status === 401
        ? 'invalid_request_error'
        : status === 429
          ? 'rate_limit_exceeded'
          : status >= 500
            ? 'server_error'
            : 'invalid_request_error';
    return errorBody(message, type);
  }

  protected streamSteps(reply: ResolvedReply, request: AcceptedChat): StreamStep[] {
    const chunk = (choices: unknown[], extra: Record<string, unknown> = {}) =>
      frame({
        id: request.id,
        object: 'chat.completion.chunk',
        created: request.createdSecs,
        model: request.model,
        system_fingerprint: 'fp_emulator',
        choices,
        ...(request.includeUsage ? { usage: null } : {}),
        ...extra,
      });
    const delta = (value: Record<string, unknown>, finishReason: string | null = null) => ({
      index: 0,
      delta: value,
      logprobs: null,
      finish_reason: finishReason,
    });

    const steps: StreamStep[] = [{ frame: chunk([delta({ role: 'assistant', content: '' })]), token: false }];
    for (const token of reply.tokens) steps.push({ frame: chunk([delta({ content: token })]), token: true });
    reply.toolCalls.forEach((call, index) => {
      const id = `call_emu${this.sequence}_${index}`;
      steps.push({
        frame: chunk([
          delta({ tool_calls: [{ index, id, type: 'function', function: { name: call.name, arguments: '' } }] }),
        ]),
        token: true,
      });
      for (const piece of fragments(call.argumentsJson)) {
        steps.push({ frame: chunk([delta({ tool_calls: [{ index, function: { arguments: piece } }] })]), token: true });
      }
    });
    steps.push({ frame: chunk([delta({}, reply.toolCalls.length > 0 ? 'tool_calls' : 'stop')]), token: false });
    if (request.includeUsage) {
      const usage = this.usage(reply, request);
      steps.push({ frame: chunk([], { usage }), token: false });
    }
    steps.push({ frame: 'data: [DONE]\n\n', token: false });
    return steps;
  }

  protected errorFrame(): string {
    return frame(errorBody('The server had an error while processing your request. Sorry about that!', 'server_error'));
  }

  protected wholeResponse(reply: ResolvedReply, request: AcceptedChat): unknown {
    const toolCalls = reply.toolCalls.map((call, index) => ({
      id: `call_emu${this.sequence}_${index}`,
      type: 'function',
      function: { name: call.name, arguments: call.argumentsJson },
    }));
    return {
      id: request.id,
      object: 'chat.completion',
      created: request.createdSecs,
      model: request.model,
      system_fingerprint: 'fp_emulator',
      choices: [
        {
          index: 0,
          message: {
            role: 'assistant',
            content: reply.tokens.join('') || null,
            ...(toolCalls.length > 0 ? { tool_calls: toolCalls } : {}),
          },
          logprobs: null,
          finish_reason: toolCalls.length > 0 ? 'tool_calls' : 'stop',
        },
      ],
      usage: this.usage(reply, request),
    };
  }

  private usage(reply: ResolvedReply, request: AcceptedChat) {
    const prompt = approxTokens(request.promptChars);
    const completion = reply.tokens.length + reply.toolCalls.length;
    return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
  }
}

function frame(payload: unknown): string {
  return `data: ${JSON.stringify(payload)}\n\n`;
}

function errorBody(
  message: string,
  type: string,
  code: string | null = null,
  param: string | null = null,
): OpenAiErrorBody {
  return { error: { message, type, param, code } };
}

function lastUserText(request: ChatCompletionRequest): string | undefined {
  for (let i = request.messages.length - 1; i >= 0; i -= 1) {
    const message = request.messages[i]!;
    if (message.role !== 'user') continue;
    if (typeof message.content === 'string') return message.content;
    return message.content
      .map((part) => (part.type === 'text' ? part.text : ''))
      .filter(Boolean)
      .join(' ');
  }
  return undefined;
}

/**
 * OpenAI's rules for function calls in the history, with its messages: an assistant message with
 * `tool_calls` must be followed, at once, by one `tool` message per call id; a `tool` message must
 * answer a call of the assistant message before its run of tool messages.
 */
function toolMessageProblem(request: ChatCompletionRequest): { message: string; param: string } | undefined {
  const messages = request.messages;
  for (let i = 0; i < messages.length; i += 1) {
    const message = messages[i]!;
    if (message.role === 'tool') {
      let owner = i - 1;
      while (owner >= 0 && messages[owner]!.role === 'tool') owner -= 1;
      const calls = owner >= 0 ? callIds(messages[owner]!) : [];
      if (calls.length === 0)
        return {
          message:
            "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.",
          param: `messages.[${i}].role`,
        };
      if (!calls.includes(message.tool_call_id))
        return {
          message: `Invalid parameter: 'tool_call_id' of '${message.tool_call_id}' not found in 'tool_calls' of previous message.`,
          param: `messages.[${i}].tool_call_id`,
        };
      continue;
    }
    const calls = callIds(message);
    if (calls.length === 0) continue;
    const answered = new Set<string>();
    for (let j = i + 1; j < messages.length && messages[j]!.role === 'tool'; j += 1) {
      const reply = messages[j]!;
      if (reply.role === 'tool') answered.add(reply.tool_call_id);
    }
    const missing = calls.filter((id) => !answered.has(id));
    if (missing.length > 0)
      return {
        message: `An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: ${missing.join(', ')}`,
        param: `messages.[${i}].role`,
      };
  }
  return undefined;
}

function callIds(message: ChatMessage): string[] {
  return message.role === 'assistant' ? (message.tool_calls ?? []).map((call) => call.id) : [];
}

/** The tool messages the conversation ends with, named from the calls they answer. */
function trailingToolResults(request: ChatCompletionRequest): EmulatedToolResult[] {
  const messages = request.messages;
  const results: EmulatedToolResult[] = [];
  let i = messages.length - 1;
  for (; i >= 0; i -= 1) {
    const message = messages[i]!;
    if (message.role !== 'tool') break;
    const content =
      typeof message.content === 'string' ? message.content : message.content.map((part) => part.text).join('');
    results.unshift({ name: undefined, callId: message.tool_call_id, content });
  }
  const owner = messages[i];
  const calls = owner?.role === 'assistant' ? (owner.tool_calls ?? []) : [];
  for (const result of results) result.name = calls.find((call) => call.id === result.callId)?.function.name;
  return results;
}
