import type { IncomingMessage } from 'node:http';
import type { Logger } from 'pino';
import type { WebhookToolSettings } from '../bots/bot-config-schema.js';
import type { LlmToolCall } from '../providers/types.js';
import { type AddressPolicy, isAddressRefusal } from '../security/address-policy.js';
import { readStreamEvent, sseReader } from './tool-stream.js';
import type { ToolAction, ToolCallResult, ToolRunOptions, WebhookToolRunner } from './types.js';
import { ResponseTooLargeError, openWebhookRequest, readBody } from './webhook-request.js';
import { SIGNATURE_HEADER, webhookSignature } from './webhook-signature.js';

/** A tool's time limit when its entry has no `timeout_secs`. */
export const DEFAULT_TOOL_TIMEOUT_SECS = 10;
/** A result is for a model's context: more than this is refused rather than fed to it. */
export const MAX_RESULT_BYTES = 256 * 1024;
/** One streamed event, and a whole streamed answer. */
const MAX_STREAM_EVENT_CHARS = 256 * 1024;
const MAX_STREAM_BYTES = 2 * 1024 * 1024;
/** How much of a failed answer's body goes into its error result (it may explain the failure). */
const ERROR_DETAIL_CHARS = 500;

export interface WebhookToolDeps {
  policy: AddressPolicy;
  /** The configuration's `webhook_secret`: every request is signed with it. */
  signingSecret: string;
  log: Logger;
  /** Unix seconds for the signature; tests pin it. */
  nowSecs?: () => number;
}

/** The request body (POST) of every webhook tool call; GET sends the same names as query parameters. */
export interface WebhookToolRequest {
  function_name: string;
  tool_call_id: string;
  arguments: unknown;
}

/** A JSON error result: what the model reads to explain the failure to the caller. */
export function errorResult(outcome: ToolCallResult['outcome'], error: string, extra: Record<string, unknown> = {}) {
  return { outcome, resultJson: JSON.stringify({ error, ...extra }) } satisfies ToolCallResult;
}

/**
 * Calls one webhook tool (`webhook_tools.<name>`): builds and signs the request, applies the
 * address policy, bounds the answer's size and time, and turns every failure into an error result
 * the model can explain (a non-2xx status, invalid JSON, an unreachable host, the time limit, a
 * cancellation). With `streaming: true` it reads Server-Sent Events (tool-stream.ts) and hands each
 * action to `onAction` as it arrives.
 */
export function createWebhookToolRunner(tool: WebhookToolSettings, deps: WebhookToolDeps): WebhookToolRunner {
  return { run: (call, options) => runWebhookTool(tool, deps, call, options) };
}

async function runWebhookTool(
  tool: WebhookToolSettings,
  deps: WebhookToolDeps,
  call: LlmToolCall,
  options: ToolRunOptions,
): Promise<ToolCallResult> {
  const log = deps.log.child({ tool: call.name, toolCallId: call.id });
  let args: unknown;
  try {
    args = call.argumentsJson.trim() === '' ? {} : JSON.parse(call.argumentsJson);
  } catch {
    // Nothing is sent: the receiver could only fail, and the model can correct itself.
    log.info('function arguments are not JSON; the webhook was not called');
    return errorResult('error', 'The function was not called: its arguments were not valid JSON.');
  }
  if (options.signal.aborted) return errorResult('cancelled', 'The function call was cancelled before it started.');

  const abort = new AbortController();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    abort.abort();
  }, options.timeoutMs);
  const onCancel = () => abort.abort();
  options.signal.addEventListener('abort', onCancel, { once: true });
  const startedAt = performance.now();
  let response: IncomingMessage | undefined;
  try {
    const request = buildRequest(tool, deps, { function_name: call.name, tool_call_id: call.id, arguments: args });
    response = await openWebhookRequest(request.url, request.method, request.headers, request.body, {
      policy: deps.policy,
      signal: abort.signal,
    });
    const status = response.statusCode ?? 0;
    const contentType = response.headers['content-type'] ?? '';
    let result: ToolCallResult;
    if (status < 200 || status > 299) {
      const detail = await readBody(response, 64 * 1024).catch(() => Buffer.alloc(0));
      result = errorResult('error', `The function's service answered with HTTP status ${status}.`, {
        status,
        ...errorDetail(detail.toString('utf8')),
      });
    } else if (tool.streaming && contentType.includes('text/event-stream')) {
      result = await readStreamedAnswer(response, options.onAction, log);
    } else {
      result = plainResult(await readBody(response, MAX_RESULT_BYTES));
    }
    logOutcome(log, result, performance.now() - startedAt, status);
    return result;
  } catch (err) {
    const result = failure(err, { timedOut, cancelled: options.signal.aborted, timeoutMs: options.timeoutMs });
    logOutcome(log, result, performance.now() - startedAt, undefined, err);
    return result;
  } finally {
    clearTimeout(timer);
    options.signal.removeEventListener('abort', onCancel);
    response?.destroy();
  }
}

function buildRequest(
  tool: WebhookToolSettings,
  deps: WebhookToolDeps,
  payload: WebhookToolRequest,
): { url: URL; method: 'GET' | 'POST'; headers: Record<string, string>; body: string | undefined } {
  const url = new URL(tool.url);
  const method = tool.method ?? 'POST';
  const timestampSecs = deps.nowSecs?.() ?? Math.floor(Date.now() / 1000);
  const headers: Record<string, string> = {
    accept: tool.streaming ? 'text/event-stream, application/json' : 'application/json',
    'user-agent': 'Switchboard-Functions',
    ...tool.custom_headers,
  };
  if (method === 'GET') {
    url.searchParams.set('function_name', payload.function_name);
    url.searchParams.set('tool_call_id', payload.tool_call_id);
    url.searchParams.set('arguments', JSON.stringify(payload.arguments));
    headers[SIGNATURE_HEADER] = webhookSignature(deps.signingSecret, timestampSecs, url.pathname + url.search);
    return { url, method, headers, body: undefined };
  }
  const body = JSON.stringify(payload);
  headers['content-type'] = 'application/json';
  headers['content-length'] = String(Buffer.byteLength(body));
  headers[SIGNATURE_HEADER] = webhookSignature(deps.signingSecret, timestampSecs, body);
  return { url, method, headers, body };
}

/** A plain answer: its JSON is the result; an empty body says only that the function ran. */
function plainResult(body: Buffer): ToolCallResult {
  const text = body.toString('utf8').trim();
  if (text === '') return { outcome: 'ok', resultJson: JSON.stringify({ status: 'done' }) };
  try {
    return { outcome: 'ok', resultJson: JSON.stringify(JSON.parse(text)) };
  } catch {
    return errorResult('error', "The function's service answered with something that is not JSON.", errorDetail(text));
  }
}

async function readStreamedAnswer(
  response: IncomingMessage,
  onAction: (action: ToolAction) => void,
  log: Logger,
): Promise<ToolCallResult> {
  let result: ToolCallResult | undefined;
  let tooLarge = false;
  const reader = sseReader(
    MAX_STREAM_EVENT_CHARS,
    (event) => {
      if (result) return;
      const item = readStreamEvent(event);
      if (item.kind === 'action') {
        log.debug({ action: item.action.type }, 'streaming webhook action');
        onAction(item.action);
      } else if (item.kind === 'result') result = { outcome: 'ok', resultJson: item.resultJson };
      else if (item.kind === 'error') result = { outcome: 'error', resultJson: item.resultJson };
      else log.info({ reason: item.reason }, 'ignored a streaming webhook event');
    },
    () => {
      tooLarge = true;
    },
  );
  let size = 0;
  for await (const chunk of response as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_STREAM_BYTES || tooLarge) throw new ResponseTooLargeError(MAX_STREAM_BYTES);
    reader.push(chunk);
    // The result is the answer's last word: whatever follows it is not read.
    if (result) return result;
  }
  reader.end();
  if (result) return result;
  log.info('streaming webhook ended without a result event');
  return { outcome: 'ok', resultJson: JSON.stringify({ status: 'done' }) };
}

function failure(err: unknown, state: { timedOut: boolean; cancelled: boolean; timeoutMs: number }): ToolCallResult {
  if (state.timedOut)
    return errorResult(
      'timeout',
      `The function did not answer within ${Math.round(state.timeoutMs / 100) / 10} seconds.`,
    );
  if (state.cancelled) return errorResult('cancelled', 'The function call was cancelled.');
  if (err instanceof ResponseTooLargeError)
    return errorResult('error', `The function's answer was too large (over ${err.maxBytes} bytes).`);
  if (isAddressRefusal(err)) return errorResult('error', "The function's service address is not allowed.");
  return errorResult('error', "The function's service could not be reached.");
}

function errorDetail(text: string): { details?: unknown } {
  const trimmed = text.trim();
  if (!trimmed) return {};
  try {
    const parsed: unknown = JSON.parse(trimmed);
    if (trimmed.length <= ERROR_DETAIL_CHARS) return { details: parsed };
  } catch {
    // shown as text below
  }
  return { details: trimmed.slice(0, ERROR_DETAIL_CHARS) };
}

function logOutcome(log: Logger, result: ToolCallResult, elapsedMs: number, status?: number, err?: unknown): void {
  const fields = { outcome: result.outcome, elapsedMs: Math.round(elapsedMs), status };
  if (result.outcome === 'ok') log.info(fields, 'webhook tool answered');
  else
    log.warn(
      { ...fields, err: err instanceof Error ? err.message : undefined, result: result.resultJson.slice(0, 200) },
      'webhook tool failed',
    );
}
