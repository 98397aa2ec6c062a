import type { IncomingMessage, ServerResponse } from 'node:http';
import { DEFAULT_EMULATOR_LATENCIES, type EmulatorLatencies, type VendorEmulator } from './types.js';
import { FaultPlan } from './fault-plan.js';

/**
 * What the streaming-LLM emulators (OpenAI-compatible, Anthropic, Gemini) share: routing, body
 * reading, the reply script, token pacing, failure switches and the request log. Each vendor
 * subclass supplies its paths, auth, request validation and the exact bytes of its stream.
 *
 * Cost per streamed reply: one timer and one string write per token, so hundreds of concurrent
 * calls stay cheap.
 */

export interface EmulatedToolCall {
  name: string;
  /** The arguments as a JSON object text; streamed in small fragments where the vendor does. */
  argumentsJson: string;
}

/** A scripted reply: plain text, or text and/or tool calls (several at once are parallel calls). */
export type EmulatedReply = string | { text?: string; toolCalls?: EmulatedToolCall[] };

/** A function result the request ends with (the model's second pass after its calls). */
export interface EmulatedToolResult {
  /** The function's name where the vendor's wire carries it (Gemini), else the call's name from the history. */
  name: string | undefined;
  /** The call id it answers (OpenAI, Anthropic; undefined on Gemini, which matches by name). */
  callId: string | undefined;
  /** The result as the request carried it (JSON text). */
  content: string;
}

export interface ResolvedReply {
  /** The text split into the tokens that are streamed one by one (words with their trailing space). */
  tokens: string[];
  toolCalls: EmulatedToolCall[];
}

export interface LlmEmulatorOptions {
  /** Only llmFirstTokenMs and llmTokensPerSec apply. */
  latencies?: Partial<EmulatorLatencies>;
  /** Replies given in turn, cycling. Without any, each reply is "You said: <last user words>". */
  replies?: EmulatedReply[];
  /**
   * The reply to a request whose conversation ends with function results, instead of the next of
   * `replies`: so concurrent calls each get "call the tool, then answer with its result" whatever
   * order their requests arrive in. A function builds the reply from the results.
   */
  afterToolResults?: EmulatedReply | ((results: EmulatedToolResult[]) => EmulatedReply);
  /** The one key accepted; by default any non-empty key is. */
  apiKey?: string;
  /** Requests kept in `requests` (oldest dropped first), so long load tests use bounded memory. Default 200. */
  maxRecordedRequests?: number;
  /** Larger request bodies get a 413. Default 20 MB (vision requests carry images). */
  maxBodyBytes?: number;
}

export interface RecordedLlmRequest {
  method: string;
  /** Path and query, with any key in the query replaced by [redacted]. */
  path: string;
  /** Request headers; those that carry keys are kept but read [redacted]. */
  headers: Record<string, string>;
  /** The parsed JSON body (undefined when it was not JSON). */
  body: unknown;
  /** The HTTP status sent (undefined while the emulator has not answered, e.g. a `hang` fault). */
  status?: number;
  /** The client closed the connection before the response was complete (barge-in, timeout). */
  abortedByClient: boolean;
}

export interface LlmEmulatorStats {
  requests: number;
  /** Responses sent in full. */
  completed: number;
  abortedByClient: number;
  /** Connections open now. */
  active: number;
}

/** A refusal in the vendor's error shape. */
export interface Rejection {
  status: number;
  body: unknown;
}

/** What a vendor subclass extracts from a valid request. */
export interface AcceptedRequest {
  model: string;
  stream: boolean;
  /** Text of the last user message, for the default reply. */
  lastUserText: string | undefined;
  /** Characters of prompt, for approximate usage numbers. */
  promptChars: number;
  /** The function results the conversation ends with; empty when it ends with the caller's turn. */
  toolResults: EmulatedToolResult[];
}

/** One piece of a stream. Tokens are paced at llmTokensPerSec and counted by the failure switches. */
export interface StreamStep {
  frame: string;
  token: boolean;
}

/** A response still being written (or held open by a `hang` or `stall` fault). */
interface OpenResponse {
  timer?: NodeJS.Timeout;
  /** close() ended it: not counted as a client abort. */
  closedByEmulator: boolean;
}

const DEFAULT_MAX_RECORDED = 200;
const DEFAULT_MAX_BODY_BYTES = 20 * 1024 * 1024;
/** Tool-call arguments are streamed in pieces this long, as vendors do. */
export const ARGUMENT_FRAGMENT_CHARS = 8;

export abstract class LlmEmulatorBase<A extends AcceptedRequest = AcceptedRequest> implements VendorEmulator {
  abstract readonly vendor: string;

  /**
   * Faults to play on the next requests (fault-plan.ts): `reject` (this HTTP error, with the
   * vendor's error body unless `body` is given), `hang` (read and never answered: no headers, no
   * bytes), and in the stream: `stall` (silent, connection open, once `afterTokens` tokens were
   * sent; 0 = after the headers), `error` (the vendor's in-stream error event after `afterTokens`
   * tokens, then the end), `malformed` (one event whose JSON is broken, after `afterTokens` tokens).
   */
  readonly faults = new FaultPlan();

  /** Recent requests, oldest first (bounded by maxRecordedRequests). */
  readonly requests: RecordedLlmRequest[] = [];
  readonly stats: LlmEmulatorStats = { requests: 0, completed: 0, abortedByClient: 0, active: 0 };

  protected readonly latencies: EmulatorLatencies;
  protected readonly expectedKey: string | undefined;
  private readonly replies: EmulatedReply[];
  private readonly afterToolResults: LlmEmulatorOptions['afterToolResults'];
  private replyIndex = 0;
  private readonly maxRecorded: number;
  private readonly maxBodyBytes: number;
  private readonly open = new Map<ServerResponse, OpenResponse>();

  constructor(options: LlmEmulatorOptions = {}) {
    this.latencies = { ...DEFAULT_EMULATOR_LATENCIES, ...options.latencies };
    this.replies = options.replies ?? [];
    this.afterToolResults = options.afterToolResults;
    this.expectedKey = options.apiKey;
    this.maxRecorded = options.maxRecordedRequests ?? DEFAULT_MAX_RECORDED;
    this.maxBodyBytes = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  }

  // ---- vendor specifics ----

  /** Whether this request is this vendor's (by path); others are left to other emulators. */
  protected abstract claims(url: URL): boolean;
  /** A rejection when the credentials are missing or wrong, as the vendor answers. */
  protected abstract authenticate(req: IncomingMessage, url: URL): Rejection | undefined;
  /** Validates the body (zod); a rejection in the vendor's 400 shape when it is bad. */
  protected abstract accept(body: unknown, url: URL, req: IncomingMessage): A | Rejection;
  /** The vendor's error body for a status (a `reject` fault without a body, bad JSON, wrong method). */
  protected abstract errorBody(status: number, message: string): unknown;
  /** The whole stream for a reply, in order. */
  protected abstract streamSteps(reply: ResolvedReply, request: A): StreamStep[];
  /** The vendor's in-stream error event (ends the stream). */
  protected abstract errorFrame(): string;
  /** The reply as one JSON document, for a request that does not stream. */
  protected abstract wholeResponse(reply: ResolvedReply, request: A): unknown;
  /** Headers whose values are keys: recorded as [redacted]. */
  protected secretHeaders = ['authorization', 'x-api-key', 'x-goog-api-key', 'api-key', 'cookie'];
  /** An event whose JSON does not parse. */
  protected malformedFrame(): string {
    return 'data: {"broken": \n\n';
  }
  protected recordedPath(url: URL): string {
    return url.pathname + url.search;
  }

  // ---- VendorEmulator ----

  handleHttp(req: IncomingMessage, res: ServerResponse): boolean {
    const url = new URL(req.url ?? '/', 'http://emulator');
    if (!this.claims(url)) return false;
    this.serve(req, res, url).catch(() => {
      if (!res.headersSent) this.sendJson(res, 500, this.errorBody(500, 'emulator failure'));
      else res.destroy();
    });
    return true;
  }

  close(): void {
    for (const [res, state] of this.open) {
      clearTimeout(state.timer);
      state.closedByEmulator = true;
      res.destroy();
    }
  }

  // ---- one request ----

  private async serve(req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
    const record: RecordedLlmRequest = {
      method: req.method ?? 'GET',
      path: this.recordedPath(url),
      headers: this.recordedHeaders(req),
      body: undefined,
      abortedByClient: false,
    };
    this.stats.requests += 1;
    this.requests.push(record);
    if (this.requests.length > this.maxRecorded) this.requests.shift();
    this.track(res, record);

    if (req.method !== 'POST')
      return this.reply(res, record, 405, this.errorBody(405, `method ${req.method} is not allowed; use POST`));
    const raw = await this.readBody(req);
    if (raw === undefined) return this.reply(res, record, 413, this.errorBody(413, 'request body too large'));
    try {
      record.body = JSON.parse(raw);
    } catch {
      return this.reply(res, record, 400, this.errorBody(400, 'the request body is not valid JSON'));
    }

    const fail = this.faults.take(['reject']);
    if (fail) {
      return this.reply(
        res,
        record,
        fail.status,
        fail.body ?? this.errorBody(fail.status, `emulated failure (HTTP ${fail.status})`),
      );
    }
    if (this.faults.take(['hang'])) return;
    const denied = this.authenticate(req, url);
    if (denied) return this.reply(res, record, denied.status, denied.body);
    const accepted = this.accept(record.body, url, req);
    if (isRejection(accepted)) return this.reply(res, record, accepted.status, accepted.body);

    const reply = this.nextReply(accepted);
    if (!accepted.stream) {
      this.schedule(res, this.latencies.llmFirstTokenMs, () =>
        this.reply(res, record, 200, this.wholeResponse(reply, accepted)),
      );
      return;
    }
    record.status = 200;
    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache',
      connection: 'keep-alive',
    });
    res.flushHeaders();
    this.runStream(res, this.streamSteps(reply, accepted));
  }

  /** Sends the steps with the configured pacing, applying this request's failure switches. */
  private runStream(res: ServerResponse, steps: StreamStep[]): void {
    // A stream fault without `afterTokens` strikes at once (after the headers).
    const afterTokens = (fault: { afterTokens?: number } | undefined) => (fault ? (fault.afterTokens ?? 0) : undefined);
    const stallAfter = afterTokens(this.faults.take(['stall']));
    const errorAfter = afterTokens(this.faults.take(['error']));
    let malformedAfter = afterTokens(this.faults.take(['malformed']));
    const intervalMs = this.latencies.llmTokensPerSec > 0 ? 1000 / this.latencies.llmTokensPerSec : 0;
    let next = 0;
    let tokensSent = 0;

    const tick = () => {
      if (res.destroyed || res.writableEnded) return;
      let out = '';
      // Everything up to and including the next token goes out together; then wait for the next.
      while (next < steps.length) {
        if (stallAfter !== undefined && tokensSent >= stallAfter) {
          if (out) res.write(out);
          return; // silent from here on; the client's timeout (or close()) ends it
        }
        if (errorAfter !== undefined && tokensSent >= errorAfter) {
          res.end(out + this.errorFrame());
          return;
        }
        if (malformedAfter !== undefined && tokensSent >= malformedAfter) {
          out += this.malformedFrame();
          malformedAfter = undefined;
        }
        const step = steps[next++]!;
        out += step.frame;
        if (step.token) {
          tokensSent += 1;
          break;
        }
      }
      if (next >= steps.length) {
        res.end(out);
        return;
      }
      res.write(out);
      this.schedule(res, intervalMs, tick);
    };
    this.schedule(res, this.latencies.llmFirstTokenMs, tick);
  }

  private nextReply(request: AcceptedRequest): ResolvedReply {
    const lastUserText = request.lastUserText;
    let scripted: EmulatedReply;
    const after = this.afterToolResults;
    if (after !== undefined && request.toolResults.length > 0) {
      scripted = typeof after === 'function' ? after(request.toolResults) : after;
    } else if (this.replies.length > 0) {
      scripted = this.replies[this.replyIndex % this.replies.length]!;
      this.replyIndex += 1;
    } else {
      const words = lastUserText?.trim();
      scripted = words ? `You said: ${words}` : 'Hello! How can I help you today?';
    }
    const text = typeof scripted === 'string' ? scripted : (scripted.text ?? '');
    const toolCalls = typeof scripted === 'string' ? [] : (scripted.toolCalls ?? []);
    return { tokens: tokenize(text), toolCalls };
  }

  // ---- plumbing ----

  private track(res: ServerResponse, record: RecordedLlmRequest): void {
    this.stats.active += 1;
    const state: OpenResponse = { closedByEmulator: false };
    this.open.set(res, state);
    res.on('close', () => {
      clearTimeout(state.timer);
      this.open.delete(res);
      this.stats.active -= 1;
      if (res.writableFinished) {
        this.stats.completed += 1;
      } else if (!state.closedByEmulator) {
        record.abortedByClient = true;
        this.stats.abortedByClient += 1;
      }
    });
  }

  private schedule(res: ServerResponse, delayMs: number, fn: () => void): void {
    const state = this.open.get(res);
    if (!state) return;
    state.timer = setTimeout(fn, delayMs);
  }

  private reply(res: ServerResponse, record: RecordedLlmRequest, status: number, body: unknown): void {
    record.status = status;
    this.sendJson(res, status, body);
  }

  private sendJson(res: ServerResponse, status: number, body: unknown): void {
    if (res.destroyed || res.writableEnded) return;
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  }

  private readBody(req: IncomingMessage): Promise<string | undefined> {
    return new Promise((resolve, reject) => {
      const chunks: Buffer[] = [];
      let bytes = 0;
      let tooLarge = false;
      req.on('data', (chunk: Buffer) => {
        bytes += chunk.length;
        if (bytes > this.maxBodyBytes) tooLarge = true;
        else chunks.push(chunk);
      });
      req.on('end', () => resolve(tooLarge ? undefined : Buffer.concat(chunks).toString('utf8')));
      req.on('error', reject);
    });
  }

  private recordedHeaders(req: IncomingMessage): Record<string, string> {
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(req.headers)) {
      if (value === undefined) continue;
      headers[name] = this.secretHeaders.includes(name)
        ? '[redacted]'
        : Array.isArray(value)
          ? value.join(', ')
          : value;
    }
    return headers;
  }
}

function isRejection(value: AcceptedRequest | Rejection): value is Rejection {
  return 'status' in value && 'body' in value;
}

/** Words with their trailing whitespace: "You said: hi" → ["You ", "said: ", "hi"]. */
export function tokenize(text: string): string[] {
  return text.length === 0 ? [] : text.split(/(?<=\s)(?=\S)/);
}

/** Pieces of a string, as vendors stream tool-call arguments. */
export function fragments(text: string, size = ARGUMENT_FRAGMENT_CHARS): string[] {
  const out: string[] = [];
  for (let i = 0; i < text.length; i += size) out.push(text.slice(i, i + size));
  return out;
}

/** The text of a bearer token, or undefined. */
export function bearerToken(req: IncomingMessage): string | undefined {
  const header = req.headers.authorization;
  const match = header ? /^Bearer\s+(.+)$/i.exec(header) : null;
  return match?.[1]?.trim() || undefined;
}

/** A zod issue list as one line: `messages.0.role: Invalid input`. */
export function describeZodIssues(issues: ReadonlyArray<{ path: PropertyKey[]; message: string }>): string {
  return issues
    .slice(0, 5)
    .map((issue) => `${issue.path.map(String).join('.') || '(body)'}: ${issue.message}`)
    .join('; ');
}

/** Rough token count for usage numbers: about four characters per token. */
export function approxTokens(chars: number): number {
  return Math.max(1, Math.ceil(chars / 4));
}
