import type { LookupFunction } from 'node:net';
import type { Logger } from 'pino';
import WebSocket, { type RawData } from 'ws';
import { abortError, handshakeError, handshakeRefusal } from './vendor-errors.js';
import { frameBytes, openVendorSocket } from './vendor-socket.js';
import { ProviderError } from './types.js';

/**
 * The Deepgram websocket, shared by the speech-to-text (`/v1/listen`) and Aura text-to-speech
 * (`/v1/speak`) adapters: the same host, the same auth, the same handshake errors.
 */

export const DEEPGRAM_ORIGIN = 'https://api.deepgram.com';

export interface DeepgramSocketOptions {
  /** The provider name errors carry (`deepgram`, `deepgram_tts`). */
  provider: string;
  url: string;
  apiKey: string;
  /** Bounds the handshake. */
  timeoutMs: number;
  /** Resolves the host when set (a bot's own base_url), refusing forbidden addresses. */
  lookup?: LookupFunction;
  /** Aborting it while the handshake runs ends it with an AbortError. */
  signal: AbortSignal;
  log: Logger;
  onText(text: string): void;
  onBinary(data: Buffer): void;
  /** The socket closed after it had opened. */
  onClose(code: number, reason: string): void;
}

export interface DeepgramSocket {
  ws: WebSocket;
  /** Resolves once open; rejects with a ProviderError (refused, timed out, unreachable) or an AbortError. */
  opened: Promise<void>;
}

/**
 * Opens a Deepgram websocket with `Authorization: Token <key>`. Listeners are attached at once,
 * so no frame that follows the upgrade is missed. A refused handshake becomes a ProviderError
 * with the HTTP status and Deepgram's error text (JSON body, else the dg-error header); 429 and
 * 5xx are retryable, other statuses are not.
 */
export function connectDeepgram(options: DeepgramSocketOptions): DeepgramSocket {
  const { provider, signal } = options;
  const startedMs = performance.now();
  const ws = openVendorSocket(options.url, {
    headers: { Authorization: `Token ${options.apiKey}` },
    timeoutMs: options.timeoutMs,
    lookup: options.lookup,
  });
  let opened = false;
  let settled = false;
  let resolveOpened!: () => void;
  let rejectOpened!: (error: unknown) => void;
  const promise = new Promise<void>((resolve, reject) => {
    resolveOpened = resolve;
    rejectOpened = reject;
  });
  // Whoever awaits it sees the error; this only keeps an unawaited rejection from being fatal.
  promise.catch(() => undefined);

  const onAbort = (): void => fail(abortError());
  function fail(error: unknown): void {
    if (settled) return;
    settled = true;
    signal.removeEventListener('abort', onAbort);
    rejectOpened(error);
    if (ws.readyState !== WebSocket.CLOSED) ws.terminate();
  }
  if (signal.aborted) queueMicrotask(onAbort);
  else signal.addEventListener('abort', onAbort, { once: true });

  ws.on('open', () => {
    if (settled) return;
    opened = true;
    settled = true;
    signal.removeEventListener('abort', onAbort);
    options.log.debug({ provider, handshakeMs: Math.round(performance.now() - startedMs) }, 'vendor socket open');
    resolveOpened();
  });
  ws.on('unexpected-response', (_req, res) => {
    void handshakeRefusal(provider, res, options.apiKey, 'dg-error').then(fail);
  });
  ws.on('error', (err) => {
    // Errors after the upgrade are followed by 'close', which is what callers act on.
    if (opened || settled) return;
    fail(handshakeError(provider, err, options.timeoutMs, options.apiKey));
  });
  ws.on('message', (data: RawData, isBinary: boolean) => {
    if (isBinary) options.onBinary(frameBytes(data));
    else options.onText(frameBytes(data).toString('utf8'));
  });
  ws.on('close', (code: number, reason: Buffer) => {
    if (opened) options.onClose(code, reason.toString('utf8'));
    else fail(new ProviderError(provider, `the connection closed during the handshake (code ${code})`, true));
  });
  return { ws, opened: promise };
}
