import type { IncomingMessage } from 'node:http';
import type { LookupFunction } from 'node:net';
import type { Logger } from 'pino';
import WebSocket, { type RawData } from 'ws';
import { ProviderError } from '../types.js';
import { handshakeError, handshakeRefusal, isRetryableCloseCode, oneLine, redact } from '../vendor-errors.js';
import { frameText, openVendorSocket } from '../vendor-socket.js';
import { CLOSE } from '../../shared/close-codes.js';

/**
 * Websocket TTS machinery shared by the Cartesia and ElevenLabs adapters: a socket per call
 * multiplexing replies by context id. The life of one reply on it is `socket-reply.ts`.
 */

/** A vendor frame, parsed. */
export interface ParsedFrame<M> {
  contextId: string | undefined;
  message: M;
  /** Set when the message fails the whole connection rather than one context. */
  connectionError?: ProviderError;
}

export interface TtsSocketOptions<M> {
  provider: string;
  url: string;
  headers: Record<string, string>;
  /** Never shown in an error (the key, in case a vendor echoes it). */
  secret: string;
  /** Bounds the handshake. */
  timeoutMs: number;
  /** Resolves the host when set (a bot's own base_url), refusing forbidden addresses. */
  lookup?: LookupFunction;
  /** With no context registered for this long, the socket is closed. */
  idleCloseMs: number;
  /** Parses a text frame's JSON; undefined skips it (the parser says why, at debug). */
  parse(json: unknown, log: Logger): ParsedFrame<M> | undefined;
}

/** What the socket delivers to one context. */
export interface ContextHandler<M> {
  onMessage(message: M): void;
  onFailure(error: ProviderError): void;
}

/**
 * One vendor websocket, shared by the replies of one call and routed by context id. Messages for
 * a context nobody listens to any more (cancelled, finished) are dropped. A handshake refused
 * with an HTTP status, a failed connection or a close while replies are running fail those
 * replies with a ProviderError; after that (or an idle close) `closed` is true and the provider
 * opens a new socket for the next reply.
 */
export class TtsSocket<M> {
  /** Resolves when the socket is open; rejects with a ProviderError when it cannot open. */
  readonly ready: Promise<void>;
  closed = false;
  private readonly ws: WebSocket;
  private readonly handlers = new Map<string, ContextHandler<M>>();
  private idleTimer: NodeJS.Timeout | undefined;
  private failure: ProviderError | undefined;
  private rejectReady: ((error: ProviderError) => void) | undefined;

  constructor(
    private readonly options: TtsSocketOptions<M>,
    private readonly log: Logger,
  ) {
    const startedMs = performance.now();
    this.ws = openVendorSocket(options.url, options);
    this.ready = new Promise<void>((resolve, reject) => {
      this.rejectReady = reject;
      this.ws.once('open', () => {
        log.debug(
          { provider: options.provider, handshakeMs: Math.round(performance.now() - startedMs) },
          'tts socket open',
        );
        resolve();
      });
    });
    // Whoever awaits it sees the error; this only keeps an unawaited rejection from being fatal.
    this.ready.catch(() => undefined);
    this.ws.on('unexpected-response', (_req, res) => this.onRejected(res));
    this.ws.on('error', (err) => this.onError(err));
    this.ws.on('close', (code, reason) => this.onClose(code, reason.toString()));
    this.ws.on('message', (data, isBinary) => this.onMessage(data, isBinary));
  }

  register(contextId: string, handler: ContextHandler<M>): void {
    clearTimeout(this.idleTimer);
    this.handlers.set(contextId, handler);
    if (this.failure) handler.onFailure(this.failure);
  }

  unregister(contextId: string): void {
    this.handlers.delete(contextId);
    if (this.handlers.size > 0 || this.closed) return;
    clearTimeout(this.idleTimer);
    // The provider has no close hook: an idle socket (between replies, after the call) closes itself.
    this.idleTimer = setTimeout(() => this.close(), this.options.idleCloseMs);
    this.idleTimer.unref();
  }

  /** Sends a JSON message; throws a retryable ProviderError when the socket is not open. */
  send(message: object): void {
    if (this.ws.readyState !== WebSocket.OPEN)
      throw this.failure ?? new ProviderError(this.options.provider, 'the connection is closed', true);
    this.ws.send(JSON.stringify(message));
  }

  /** Gives up on the socket (a context went silent): its replies fail and the next one reconnects. */
  discard(error: ProviderError): void {
    this.failAll(error);
    this.ws.terminate();
  }

  /** Closes politely; `beforeClose` may send a last message (a vendor's close_socket). */
  close(beforeClose?: () => void): void {
    if (this.closed) return;
    this.closed = true;
    clearTimeout(this.idleTimer);
    if (this.ws.readyState === WebSocket.CONNECTING) {
      this.ws.terminate();
      return;
    }
    try {
      beforeClose?.();
    } catch {
      // Closing anyway.
    }
    this.ws.close(CLOSE.normal);
  }

  private failAll(error: ProviderError): void {
    this.closed = true;
    clearTimeout(this.idleTimer);
    this.failure ??= error;
    this.rejectReady?.(error);
    for (const handler of [...this.handlers.values()]) handler.onFailure(error);
  }

  /** The handshake got an HTTP answer instead of an upgrade: report its status and the vendor's text. */
  private onRejected(res: IncomingMessage): void {
    void handshakeRefusal(this.options.provider, res, this.options.secret).then((error) => {
      this.failAll(error);
      this.ws.terminate();
    });
  }

  private onError(err: Error): void {
    // Errors before the socket opened end the handshake; later ones are followed by 'close'.
    if (this.ws.readyState === WebSocket.OPEN || this.failure) return;
    this.failAll(handshakeError(this.options.provider, err, this.options.timeoutMs, this.options.secret));
  }

  private onClose(code: number, reason: string): void {
    const closedByUs = this.closed;
    this.closed = true;
    clearTimeout(this.idleTimer);
    this.log.debug({ provider: this.options.provider, code, closedByUs }, 'tts socket closed');
    if (closedByUs && this.handlers.size === 0) return;
    const detail = reason ? `: ${oneLine(redact(reason, this.options.secret))}` : '';
    this.failAll(
      new ProviderError(
        this.options.provider,
        `the vendor closed the connection (code ${code}${detail})`,
        isRetryableCloseCode(code),
      ),
    );
  }

  private onMessage(data: RawData, isBinary: boolean): void {
    const provider = this.options.provider;
    if (isBinary) {
      this.log.debug({ provider }, 'skipped a binary frame');
      return;
    }
    let json: unknown;
    try {
      json = JSON.parse(frameText(data));
    } catch {
      this.log.debug({ provider }, 'skipped a frame that is not JSON');
      return;
    }
    const frame = this.options.parse(json, this.log);
    if (!frame) return;
    if (frame.connectionError) {
      this.failAll(frame.connectionError);
      this.ws.close(CLOSE.normal);
      return;
    }
    const handler = frame.contextId === undefined ? undefined : this.handlers.get(frame.contextId);
    // Audio of a cancelled or finished context may still be in flight: dropped, as barge-in requires.
    if (handler) handler.onMessage(frame.message);
    else this.log.debug({ provider }, 'dropped a message for an inactive context');
  }
}
