import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { LookupFunction } from 'node:net';
import type { Logger } from 'pino';
import WebSocket, { type RawData } from 'ws';
import { type ProviderContext, ProviderError, type TtsOutput } from '../types.js';
import { handshakeError, handshakeRefusal, isRetryableCloseCode, oneLine, redact } from '../vendor-errors.js';
import { frameText, openVendorSocket } from '../vendor-socket.js';
import { CLOSE } from '../../shared/close-codes.js';

/**
 * Websocket TTS machinery shared by the Cartesia and ElevenLabs adapters: a socket per call
 * multiplexing replies by context id, and the life of one reply (and the queue OpenAI TTS uses too).
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
interface ContextHandler<M> {
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

/**
 * One reply spoken through a TtsSocket: a context opened with the first piece, fed piece by piece
 * as the text arrives, ended when the text ends, completed by the vendor. Subclasses say how each
 * step looks on the wire and read the vendor's messages.
 *
 * - Text is pulled as soon as the reply starts, so the LLM runs while the socket connects.
 * - Aborting ctx.signal (barge-in, hang-up), a failure or the consumer leaving early cancels the
 *   context at the vendor at once; nothing is yielded after an abort, and it throws nothing.
 * - A failing text source (the LLM) ends the reply with its own error, unwrapped.
 * - Silence longer than timeoutMs while audio is due (from the first piece sent to the first
 *   audio, and after the end of input until completion) fails with a retryable ProviderError and
 *   discards the socket.
 */
export abstract class SocketReply<M> implements ContextHandler<M> {
  readonly contextId = `sb-${randomUUID()}`;
  /** A piece was sent: the context exists at the vendor and must be cancelled if abandoned. */
  protected started = false;
  /** Done, failed or stopped: nothing more is sent or taken. */
  protected finished = false;
  private inputEnded = false;
  private gotAudio = false;
  private readonly output = new OutputQueue();
  private readonly words = new ReplyWords();
  private timer: NodeJS.Timeout | undefined;

  constructor(
    protected readonly socket: TtsSocket<M>,
    private readonly provider: string,
    private readonly timeoutMs: number,
    protected readonly ctx: ProviderContext,
  ) {}

  abstract onMessage(message: M): void;
  /** Sends one non-blank piece; `this.started` is false for the first one. */
  protected abstract sendPiece(piece: string): void;
  protected abstract sendEndOfInput(): void;
  protected abstract sendCancel(): void;

  async *run(text: AsyncIterable<string>): AsyncGenerator<TtsOutput> {
    const { signal } = this.ctx;
    const onAbort = () => {
      this.stop();
      this.output.discard();
    };
    signal.addEventListener('abort', onAbort, { once: true });
    this.socket.register(this.contextId, this);
    const pieces = text[Symbol.asyncIterator]();
    void this.pump(pieces);
    try {
      yield* this.output.drain();
    } finally {
      signal.removeEventListener('abort', onAbort);
      this.stop();
      this.socket.unregister(this.contextId);
      // Stops the text source if the reply ended early (failure, consumer gone); a no-op otherwise.
      pieces.return?.().catch(() => undefined);
    }
  }

  onFailure(error: ProviderError): void {
    this.fail(error);
  }

  /** Audio for this context arrived. */
  protected audio(bytes: Uint8Array): void {
    if (this.finished || bytes.length === 0) return;
    this.gotAudio = true;
    this.output.push({ type: 'audio', audio: bytes });
    this.vendorAlive();
  }

  /** The audio so far covers the reply's first `wordCount` words: reports those not yet reported. */
  protected heard(wordCount: number): void {
    if (this.finished) return;
    const text = this.words.take(wordCount);
    if (text) this.output.push({ type: 'spoken', text });
  }

  /** The vendor finished the context: the rest of the text was spoken. */
  protected complete(): void {
    if (this.finished) return;
    const rest = this.words.rest();
    if (rest) this.output.push({ type: 'spoken', text: rest });
    this.finished = true;
    clearTimeout(this.timer);
    this.output.end();
  }

  /** A message showed the vendor is working on the context: the silence timer starts over. */
  protected vendorAlive(): void {
    this.armTimer(true);
  }

  protected fail(error: unknown): void {
    if (this.finished) return;
    this.finished = true;
    this.cancelAtVendor();
    this.output.fail(error);
  }

  /** Ends the reply quietly (abort, consumer gone), cancelling the context at the vendor. */
  private stop(): void {
    if (this.finished) return;
    this.finished = true;
    this.cancelAtVendor();
    this.output.discard();
  }

  private async pump(pieces: AsyncIterator<string>): Promise<void> {
    try {
      for (;;) {
        const next = await pieces.next();
        if (this.finished) return;
        if (next.done) break;
        if (next.value.trim().length === 0) continue;
        await this.socket.ready;
        if (this.finished) return;
        this.sendPiece(next.value);
        this.started = true;
        this.words.add(next.value);
        if (!this.gotAudio) this.armTimer(false);
      }
      if (!this.started) {
        // Nothing to say: no context was opened at the vendor.
        this.finished = true;
        this.output.end();
        return;
      }
      this.sendEndOfInput();
      this.inputEnded = true;
      this.armTimer(true);
    } catch (err) {
      if (!this.ctx.signal.aborted) this.fail(err);
    }
  }

  /** Runs the silence timer while audio is due; `restart` resets a running one. */
  private armTimer(restart: boolean): void {
    if (this.timer && !restart) return;
    clearTimeout(this.timer);
    this.timer = undefined;
    if (this.finished || !((this.started && !this.gotAudio) || this.inputEnded)) return;
    this.timer = setTimeout(() => {
      const error = new ProviderError(
        this.provider,
        this.gotAudio ? `audio stalled for ${this.timeoutMs} ms` : `no audio within ${this.timeoutMs} ms`,
        true,
      );
      this.fail(error);
      // A silent vendor may be a dead connection: the next reply gets a fresh one.
      this.socket.discard(error);
    }, this.timeoutMs);
  }

  private cancelAtVendor(): void {
    clearTimeout(this.timer);
    if (!this.started) return;
    try {
      this.sendCancel();
      this.ctx.log.debug({ provider: this.provider, contextId: this.contextId }, 'tts context cancelled');
    } catch {
      // The socket is gone, and the context with it.
    }
  }
}

/** Items (a reply's outputs, audio chunks) handed from callbacks to one consuming generator, in order. */
export class OutputQueue<T = TtsOutput> {
  private items: T[] = [];
  /** Index of the next item to hand out (a cursor, so taking one is O(1)). */
  private head = 0;
  private ended = false;
  private failed = false;
  private error: unknown;
  private wake: (() => void) | undefined;

  push(item: T): void {
    if (this.ended) return;
    this.items.push(item);
    this.notify();
  }

  end(): void {
    this.ended = true;
    this.notify();
  }

  /** Ends now, dropping what was not taken yet (an interrupted reply yields nothing more). */
  discard(): void {
    this.items = [];
    this.head = 0;
    this.failed = false;
    this.end();
  }

  /** Ends with an error, thrown once the items already queued were taken. */
  fail(error: unknown): void {
    if (this.ended) return;
    this.ended = true;
    this.failed = true;
    this.error = error;
    this.notify();
  }

  async *drain(): AsyncGenerator<T> {
    for (;;) {
      if (this.head < this.items.length) {
        const item = this.items[this.head]!;
        this.head += 1;
        if (this.head === this.items.length) {
          this.items = [];
          this.head = 0;
        }
        yield item;
        continue;
      }
      if (this.ended) {
        if (this.failed) throw this.error;
        return;
      }
      await new Promise<void>((resolve) => {
        this.wake = resolve;
      });
    }
  }

  private notify(): void {
    const wake = this.wake;
    this.wake = undefined;
    wake?.();
  }
}

/** The reply's words in order, handed out as the vendor confirms they were voiced. */
export class ReplyWords {
  private readonly words: string[] = [];
  private given = 0;

  add(piece: string): void {
    for (const word of piece.split(/\s+/)) if (word) this.words.push(word);
  }

  /** The words up to the `count`-th of the reply not handed out yet, as one text. */
  take(count: number): string | undefined {
    const end = Math.min(count, this.words.length);
    if (end <= this.given) return undefined;
    const text = this.words.slice(this.given, end).join(' ');
    this.given = end;
    return text;
  }

  rest(): string | undefined {
    return this.take(this.words.length);
  }
}
