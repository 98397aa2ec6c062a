import { randomUUID } from 'node:crypto';
import { type ProviderContext, ProviderError, type TtsOutput } from '../types.js';
import { OutputQueue } from './output-queue.js';
import { ReplyWords } from './reply-words.js';
import type { ContextHandler, TtsSocket } from './tts-socket.js';

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
