import type { IncomingMessage } from 'node:http';
import {
  type AnthropicErrorBody,
  type MessagesRequest,
  messagesRequest,
} from '../../providers/llm/anthropic/anthropic-messages.js';
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

export interface AnthropicEmulatorOptions extends LlmEmulatorOptions {
  /** Claim only paths under this prefix (default: every path ending in /v1/messages). */
  pathPrefix?: string;
}

interface AcceptedMessages extends AcceptedRequest {
  id: string;
}

/** A ping goes out after message_start and then every this many tokens, as pings "can appear anywhere". */
const PING_EVERY_TOKENS = 20;

const ERROR_TYPES: Record<number, string> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  403: 'permission_error',
  404: 'not_found_error',
  405: 'invalid_request_error',
  413: 'request_too_large',
  429: 'rate_limit_error',
  500: 'api_error',
  529: 'overloaded_error',
};

/**
 * An Anthropic Messages server (docs/providers.md section 3): `POST …/v1/messages` with `x-api-key`
 * (or `Authorization: Bearer`, as Anthropic's SDK sends it) and `anthropic-version`, streamed as
 * `event:`/`data:` pairs: message_start, ping, content_block_start / content_block_delta
 * (text_delta, input_json_delta) / content_block_stop per block, message_delta, message_stop; no [DONE]. The in-stream failure is an `error` event
 * (overloaded_error). Requests are held to the documented rules: max_tokens present, a first user
 * message, user and assistant alternating, no empty text blocks, temperature 0-1.
 */
export class AnthropicEmulator extends LlmEmulatorBase<AcceptedMessages> {
  readonly vendor = 'anthropic';
  private readonly pathPrefix: string;
  private sequence = 0;

  constructor(options: AnthropicEmulatorOptions = {}) {
    super(options);
    this.pathPrefix = (options.pathPrefix ?? '').replace(/\/+$/, '');
  }

  protected claims(url: URL): boolean {
    return url.pathname.startsWith(`${this.pathPrefix}/`) && url.pathname.endsWith('/v1/messages');
  }

  protected authenticate(req: IncomingMessage): Rejection | undefined {
    // The key comes as `x-api-key` (what the adapter sends) or as `Authorization: Bearer <key>`
    // (what Anthropic's own TypeScript SDK sends since 1.x); the API takes either.
    const header = req.headers['x-api-key'];
    const key = typeof header === 'string' && header.length > 0 ? header : bearerToken(req);
    if (key === undefined)
      return { status: 401, body: errorBody('authentication_error', 'x-api-key header is required') };
    if (this.expectedKey !== undefined && key !== this.expectedKey)
      return { status: 401, body: errorBody('authentication_error', 'invalid x-api-key') };
    if (!req.headers['anthropic-version'])
      return { status: 400, body: errorBody('invalid_request_error', 'anthropic-version: header is required') };
    return undefined;
  }

  protected accept(body: unknown): AcceptedMessages | Rejection {
    const parsed = messagesRequest.safeParse(body);
    if (!parsed.success)
      return { status: 400, body: errorBody('invalid_request_error', describeZodIssues(parsed.error.issues)) };
    const request = parsed.data;
    const orderProblem = alternationProblem(request) ?? toolBlockProblem(request);
    if (orderProblem) return { status: 400, body: errorBody('invalid_request_error', orderProblem) };
    this.sequence += 1;
    return {
      model: request.model,
      stream: request.stream === true,
      lastUserText: lastUserText(request),
      promptChars: JSON.stringify(request.messages).length + JSON.stringify(request.system ?? '').length,
      toolResults: trailingToolResults(request),
      id: `msg_emu${this.sequence}`,
    };
  }

  protected errorBody(status: number, message: string): AnthropicErrorBody {
    return errorBody(ERROR_TYPES[status] ?? (status >= 500 ? 'api_error' : 'invalid_request_error'), message);
  }

  protected streamSteps(reply: ResolvedReply, request: AcceptedMessages): StreamStep[] {
    const steps: StreamStep[] = [];
    const add = (payload: { type: string } & Record<string, unknown>, token = false) =>
      steps.push({ frame: frame(payload), token });
    add({
      type: 'message_start',
      message: {
        id: request.id,
        type: 'message',
        role: 'assistant',
        model: request.model,
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: { input_tokens: approxTokens(request.promptChars), output_tokens: 1 },
      },
    });
    add({ type: 'ping' });
    let index = 0;
    if (reply.tokens.length > 0) {
      add({ type: 'content_block_start', index, content_block: { type: 'text', text: '' } });
      reply.tokens.forEach((token, position) => {
        add({ type: 'content_block_delta', index, delta: { type: 'text_delta', text: token } }, true);
        if ((position + 1) % PING_EVERY_TOKENS === 0) add({ type: 'ping' });
      });
      add({ type: 'content_block_stop', index });
      index += 1;
    }
    reply.toolCalls.forEach((call, position) => {
      add({
        type: 'content_block_start',
        index,
        content_block: { type: 'tool_use', id: this.toolUseId(position), name: call.name, input: {} },
      });
      for (const piece of fragments(call.argumentsJson)) {
        add({ type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json: piece } }, true);
      }
      add({ type: 'content_block_stop', index });
      index += 1;
    });
    add({
      type: 'message_delta',
      delta: { stop_reason: reply.toolCalls.length > 0 ? 'tool_use' : 'end_turn', stop_sequence: null },
      usage: { output_tokens: outputTokens(reply) },
    });
    add({ type: 'message_stop' });
    return steps;
  }

  protected errorFrame(): string {
    return frame(errorBody('overloaded_error', 'Overloaded'));
  }

  protected override malformedFrame(): string {
    return 'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":\n\n';
  }

  protected wholeResponse(reply: ResolvedReply, request: AcceptedMessages): unknown {
    const text = reply.tokens.join('');
    return {
      id: request.id,
      type: 'message',
      role: 'assistant',
      model: request.model,
      content: [
        ...(text ? [{ type: 'text', text }] : []),
        ...reply.toolCalls.map((call, position) => ({
          type: 'tool_use',
          id: this.toolUseId(position),
          name: call.name,
          input: JSON.parse(call.argumentsJson) as unknown,
        })),
      ],
      stop_reason: reply.toolCalls.length > 0 ? 'tool_use' : 'end_turn',
      stop_sequence: null,
      usage: { input_tokens: approxTokens(request.promptChars), output_tokens: outputTokens(reply) },
    };
  }

  private toolUseId(position: number): string {
    return `toolu_emu${this.sequence}_${position}`;
  }
}

function frame(payload: { type: string }): string {
  return `event: ${payload.type}\ndata: ${JSON.stringify(payload)}\n\n`;
}

function errorBody(type: string, message: string): AnthropicErrorBody {
  return { type: 'error', error: { type, message } };
}

function outputTokens(reply: ResolvedReply): number {
  return reply.tokens.length + reply.toolCalls.reduce((sum, call) => sum + approxTokens(call.argumentsJson.length), 0);
}

function alternationProblem(request: MessagesRequest): string | undefined {
  if (request.messages[0]!.role !== 'user') return 'messages: first message must use the "user" role';
  for (let i = 1; i < request.messages.length; i += 1) {
    const role = request.messages[i]!.role;
    if (role === request.messages[i - 1]!.role) {
      return `messages: roles must alternate between "user" and "assistant", but found multiple "${role}" roles in a row`;
    }
  }
  return undefined;
}

function lastUserText(request: MessagesRequest): string | undefined {
  for (let i = request.messages.length - 1; i >= 0; i -= 1) {
    const message = request.messages[i]!;
    if (message.role !== 'user') continue;
    if (typeof message.content === 'string') return message.content;
    return message.content
      .map((block) => (block.type === 'text' ? block.text : ''))
      .filter(Boolean)
      .join(' ');
  }
  return undefined;
}

type Blocks = Exclude<MessagesRequest['messages'][number]['content'], string>;

function blocksOf(message: MessagesRequest['messages'][number]): Blocks {
  return typeof message.content === 'string' ? [] : message.content;
}

/**
 * Anthropic's rules for tools in the history, with its messages: tool blocks need `tools` in the
 * request; every `tool_use` is answered by a `tool_result` in the very next (user) message, where
 * the results come before any other block; a `tool_result` answers a `tool_use` of the message
 * just before it.
 */
function toolBlockProblem(request: MessagesRequest): string | undefined {
  const messages = request.messages;
  const hasToolBlocks = messages.some((m) =>
    blocksOf(m).some((b) => b.type === 'tool_use' || b.type === 'tool_result'),
  );
  if (hasToolBlocks && (!request.tools || request.tools.length === 0))
    return 'Requests which include `tool_use` or `tool_result` blocks must define tools.';
  for (let i = 0; i < messages.length; i += 1) {
    const blocks = blocksOf(messages[i]!);
    const previous = i > 0 ? blocksOf(messages[i - 1]!) : [];
    const used = previous.flatMap((b) => (b.type === 'tool_use' ? [b.id] : []));
    let seenOther = false;
    for (let k = 0; k < blocks.length; k += 1) {
      const block = blocks[k]!;
      if (block.type !== 'tool_result') {
        seenOther = true;
        continue;
      }
      if (!used.includes(block.tool_use_id))
        return `messages.${i}.content.${k}: unexpected \`tool_use_id\` found in \`tool_result\` blocks: ${block.tool_use_id}. Each \`tool_result\` block must have a corresponding \`tool_use\` block in the previous message.`;
      if (seenOther)
        return `messages.${i}: \`tool_result\` blocks must come first in the content of a user message, before any other block.`;
    }
    const uses = blocks.flatMap((b) => (b.type === 'tool_use' ? [b.id] : []));
    if (uses.length === 0) continue;
    const next = messages[i + 1];
    const answered = new Set(
      next ? blocksOf(next).flatMap((b) => (b.type === 'tool_result' ? [b.tool_use_id] : [])) : [],
    );
    const missing = uses.filter((id) => !answered.has(id));
    if (missing.length > 0)
      return `messages.${i + 1}: \`tool_use\` ids were found without \`tool_result\` blocks immediately after: ${missing.join(', ')}. Each \`tool_use\` block must have a corresponding \`tool_result\` block in the next message.`;
  }
  return undefined;
}

/** The tool_result blocks of the last message, named from the tool_use blocks they answer. */
function trailingToolResults(request: MessagesRequest): EmulatedToolResult[] {
  const messages = request.messages;
  const last = messages.at(-1);
  if (last?.role !== 'user') return [];
  const uses = messages.length > 1 ? blocksOf(messages[messages.length - 2]!) : [];
  return blocksOf(last).flatMap((block) => {
    if (block.type !== 'tool_result') return [];
    const use = uses.find((b) => b.type === 'tool_use' && b.id === block.tool_use_id);
    const content =
      typeof block.content === 'string'
        ? block.content
        : (block.content ?? []).map((part) => (part.type === 'text' ? part.text : '')).join('');
    return [{ name: use?.type === 'tool_use' ? use.name : undefined, callId: block.tool_use_id, content }];
  });
}
