import type { IncomingMessage } from 'node:http';
import { z } from 'zod';
import { isAddressRefusal } from '../security/address-policy.js';
import { ProviderError } from './types.js';
import { NOT_RETRYABLE_CLOSES } from '../shared/close-codes.js';

/**
 * How every adapter turns a vendor's failure into a ProviderError: which statuses and close codes
 * may pass on a second try, the human part of an error body, and keys kept out of messages.
 */

/** The most of an error body read from a vendor; their errors are short JSON documents. */
export const MAX_ERROR_BODY_BYTES = 16_384;
/** The most of a vendor's text carried into a ProviderError message. */
export const MAX_ERROR_TEXT_CHARS = 500;
/** A refused handshake whose body does not finish within this long is reported without it. */
const ERROR_BODY_WAIT_MS = 2000;

/** Timeouts, conflicts, rate limits and server trouble may pass; other 4xx will fail again. */
export function isRetryableStatus(status: number): boolean {
  return status === 408 || status === 409 || status === 425 || status === 429 || status >= 500;
}

/** Closes for a protocol or policy violation will fail again; others (1006, 1011, ...) may pass. */
export function isRetryableCloseCode(code: number): boolean {
  return !NOT_RETRYABLE_CLOSES.has(code);
}

/** Error body shapes, tried in order. */
const ERROR_SHAPES: Array<(json: unknown) => string | undefined> = [
  // OpenAI `{error:{message,type}}`, Anthropic `{type:"error",error:{type,message}}`, Gemini `{error:{code,message,status}}`.
  shape(
    z.object({ error: z.object({ message: z.string(), type: z.string().optional(), status: z.string().optional() }) }),
    ({ error }) => [error.type ?? error.status, error.message].filter(Boolean).join(': '),
  ),
  // Deepgram `{err_code, err_msg}`.
  shape(
    z.object({ err_msg: z.string().optional(), err_code: z.string().optional() }),
    ({ err_msg: message, err_code: code }) => (message && code ? `${message} (${code})` : (message ?? code)),
  ),
  // Ollama and llama.cpp.
  shape(z.object({ error: z.string() }), ({ error }) => error),
  // Cartesia `{title, message}`, and plain `{message}`.
  shape(z.object({ title: z.string().optional(), message: z.string() }), ({ title, message }) =>
    [title, message].filter(Boolean).join(': '),
  ),
  // ElevenLabs `{detail:{status,message}}`, FastAPI `{detail}`.
  shape(z.object({ detail: z.union([z.string(), z.object({ message: z.string() })]) }), ({ detail }) =>
    typeof detail === 'string' ? detail : detail.message,
  ),
];

function shape<S extends z.ZodType>(
  schema: S,
  text: (body: z.infer<S>) => string | undefined,
): (json: unknown) => string | undefined {
  return (json) => {
    const parsed = schema.safeParse(json);
    return parsed.success ? text(parsed.data) : undefined;
  };
}

/**
 * The human part of an error body in one of the shapes vendors use (Gemini wraps it in an array),
 * `kind: message` where the body names a kind; undefined for anything else, which may be a whole
 * completion that must not end up in an error message.
 */
export function knownVendorErrorText(body: string): string | undefined {
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch {
    return undefined;
  }
  if (Array.isArray(json)) json = json[0];
  for (const read of ERROR_SHAPES) {
    const text = read(json);
    if (text) return oneLine(text);
  }
  return undefined;
}

/** The human part of an error body: a known shape's text, else the body itself (a proxy's page), on one line. */
export function vendorErrorText(body: string): string {
  return knownVendorErrorText(body) ?? oneLine(body);
}

/** Text on one line, cut to MAX_ERROR_TEXT_CHARS. */
export function oneLine(text: string): string {
  const line = text.trim().replace(/\s+/g, ' ');
  return line.length > MAX_ERROR_TEXT_CHARS ? `${line.slice(0, MAX_ERROR_TEXT_CHARS)}…` : line;
}

/** The text with every secret (an API key, in case a vendor echoes it) replaced. */
export function redact(text: string, secrets: string | readonly string[]): string {
  let out = text;
  for (const secret of typeof secrets === 'string' ? [secrets] : secrets) {
    if (secret.length >= 4) out = out.split(secret).join('[redacted]');
  }
  return out;
}

/** The useful words of a failed request: fetch says "fetch failed" and keeps ECONNREFUSED and the like in its cause. */
export function networkErrorText(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const cause = err.cause;
  if (cause instanceof Error && cause.message) return cause.message;
  return err.message;
}

/** A failed connection: retryable unless the address policy refused the host (it will refuse again). */
export function connectionError(provider: string, err: unknown, secret: string): ProviderError {
  return new ProviderError(
    provider,
    `connection failed: ${redact(networkErrorText(err), secret)}`,
    !isAddressRefusal(err),
    { cause: err },
  );
}

/** Reads at most MAX_ERROR_BODY_BYTES of an error response, waiting no longer than ERROR_BODY_WAIT_MS. */
export function readErrorBody(res: IncomingMessage): Promise<string> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let bytes = 0;
    let done = false;
    const finish = (): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      res.destroy();
      resolve(Buffer.concat(chunks).toString('utf8'));
    };
    const timer = setTimeout(finish, ERROR_BODY_WAIT_MS);
    res.on('data', (chunk: Buffer) => {
      if (bytes < MAX_ERROR_BODY_BYTES) chunks.push(chunk);
      bytes += chunk.length;
    });
    res.once('end', finish);
    res.once('close', finish);
    res.once('error', finish);
  });
}

/**
 * A websocket handshake answered with an HTTP status instead of an upgrade, as a ProviderError
 * with the status and the vendor's text (its body, else `textHeader`, else the status line).
 */
export async function handshakeRefusal(
  provider: string,
  res: IncomingMessage,
  secret: string,
  textHeader?: string,
): Promise<ProviderError> {
  const status = res.statusCode ?? 0;
  const body = await readErrorBody(res);
  const header = textHeader ? res.headers[textHeader] : undefined;
  const text =
    vendorErrorText(body) || (typeof header === 'string' ? oneLine(header) : '') || res.statusMessage || 'no details';
  return new ProviderError(
    provider,
    `handshake refused: HTTP ${status}: ${redact(text, secret)}`,
    isRetryableStatus(status),
  );
}

/** A websocket that failed before it opened: timed out (ws's handshakeTimeout) or unreachable. */
export function handshakeError(provider: string, err: Error, timeoutMs: number, secret: string): ProviderError {
  if (/timed out/i.test(err.message))
    return new ProviderError(provider, `no answer to the handshake within ${timeoutMs} ms`, true, { cause: err });
  return connectionError(provider, err, secret);
}

export function abortError(): Error {
  return new DOMException('The operation was aborted', 'AbortError');
}
