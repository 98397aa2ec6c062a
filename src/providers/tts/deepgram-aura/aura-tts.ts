import type { Logger } from 'pino';
import type { EndpointGuard } from '../../endpoint.js';
import WebSocket from 'ws';
import { type DeepgramSocket, connectDeepgram } from '../../deepgram-socket.js';
import { type ProviderContext, ProviderError, type TtsOutput, type TtsProvider } from '../../types.js';
import { type AudioFormat, MULAW_8K } from '../../../audio/audio-format.js';
import {
  AURA_FLUSH_LIMIT,
  CLEAR_FRAME,
  CLOSE_FRAME,
  FLUSH_FRAME,
  SPEAK_SERVER_MESSAGE_TYPES,
  type SpeakClientMessage,
  messageEnvelope,
  speakServerMessage,
} from './aura-messages.js';
import { CLOSE } from '../../../shared/close-codes.js';

const PROVIDER = 'deepgram_tts';

export interface DeepgramAuraConfig {
  /** The full websocket URL with its query, e.g. `wss://api.deepgram.com/v1/speak?model=...&encoding=mulaw&sample_rate=8000`. */
  url: string;
  apiKey: string;
  /** Bounds the handshake, and the vendor's silence while a flushed piece's audio is due. */
  timeoutMs: number;
  /** After Close, how long to wait for the server to close before closing from this side. */
  closeWaitMs: number;
  /** Deepgram's flush rate limit; pieces beyond it share the next allowed Flush. */
  flushLimit: { count: number; windowMs: number };
  /** Set for a bot's own base_url: connections check the addresses its host resolves to. */
  guard?: EndpointGuard;
}

export const DEFAULT_AURA_FLUSH_LIMIT = AURA_FLUSH_LIMIT;

/**
 * Deepgram Aura over its TTS websocket (docs/providers.md section 6b). One socket per reply, opened
 * as soon as synthesize() starts so the handshake overlaps the LLM's first tokens. Each piece goes
 * out as `Speak` then `Flush`; binary frames are its audio (8 kHz mu-law, as asked in the query)
 * and `Flushed` marks the end of that piece, so `spoken` follows its audio. Barge-in (ctx.signal)
 * sends `Clear` and stops yielding at once; every reply ends with `Close`.
 */
export class DeepgramAuraTts implements TtsProvider {
  readonly name = PROVIDER;
  readonly outputFormat: AudioFormat = MULAW_8K;

  constructor(readonly config: DeepgramAuraConfig) {}

  async *synthesize(text: AsyncIterable<string>, ctx: ProviderContext): AsyncIterable<TtsOutput> {
    if (ctx.signal.aborted) return;
    const reply = new AuraReply(this.config, ctx);
    try {
      yield* reply.outputs(text);
    } finally {
      reply.finish();
    }
  }
}

/** One reply on its own socket: pieces in, audio and `spoken` marks out, in order. */
class AuraReply {
  private readonly socket: DeepgramSocket;
  private readonly log: Logger;
  private readonly queue: TtsOutput[] = [];
  private wake: (() => void) | undefined;
  /** Pieces sent with Speak and not yet flushed. */
  private unflushed: string[] = [];
  /** Flushed groups of pieces, oldest first, each waiting for its Flushed. */
  private readonly awaiting: string[][] = [];
  /** When recent Flushes went out (performance.now()), for the rate limit. */
  private readonly flushTimesMs: number[] = [];
  private flushTimer: NodeJS.Timeout | undefined;
  private watchdog: NodeJS.Timeout | undefined;
  /** The sequence_id Deepgram gives the next Flushed: flushes and clears share one counter from 0. */
  private expectedSequenceId = 0;
  private inputEnded = false;
  private complete = false;
  private failure: unknown;
  private finished = false;
  private textIterator: AsyncIterator<string> | undefined;

  constructor(
    private readonly config: DeepgramAuraConfig,
    private readonly ctx: ProviderContext,
  ) {
    this.log = ctx.log;
    this.socket = connectDeepgram({
      provider: PROVIDER,
      url: config.url,
      lookup: config.guard?.lookup,
      apiKey: config.apiKey,
      timeoutMs: config.timeoutMs,
      signal: ctx.signal,
      log: ctx.log,
      onText: (frame) => this.onText(frame),
      onBinary: (audio) => this.onAudio(audio),
      onClose: (code, reason) => this.onClose(code, reason),
    });
    // A refused or timed-out handshake fails the reply even before the first piece arrives.
    this.socket.opened.catch((err: unknown) => this.fail(err));
  }

  async *outputs(text: AsyncIterable<string>): AsyncGenerator<TtsOutput> {
    const onAbort = (): void => this.wakeUp();
    this.ctx.signal.addEventListener('abort', onAbort, { once: true });
    void this.pump(text);
    try {
      for (;;) {
        if (this.ctx.signal.aborted) return;
        const next = this.queue.shift();
        if (next) {
          yield next;
          continue;
        }
        if (this.failure !== undefined) throw this.failure;
        if (this.complete) return;
        await new Promise<void>((resolve) => {
          this.wake = resolve;
        });
      }
    } finally {
      this.ctx.signal.removeEventListener('abort', onAbort);
    }
  }

  /** Ends the reply: Clear if audio was still due, then Close; stops reading the text. */
  finish(): void {
    if (this.finished) return;
    this.finished = true;
    clearTimeout(this.flushTimer);
    clearTimeout(this.watchdog);
    // Stops the text source at its next piece (it is usually aborted by the same signal anyway).
    this.textIterator?.return?.().catch(() => undefined);
    const ws = this.socket.ws;
    if (ws.readyState === WebSocket.CONNECTING) {
      ws.terminate();
      return;
    }
    if (ws.readyState !== WebSocket.OPEN) return;
    const outstanding = this.awaiting.length > 0 || this.unflushed.length > 0;
    try {
      if (!this.complete && outstanding) ws.send(CLEAR_FRAME);
      ws.send(CLOSE_FRAME);
    } catch {
      ws.terminate();
      return;
    }
    // Close makes the server close at once; if it does not, close from this side.
    const timer = setTimeout(() => ws.terminate(), this.config.closeWaitMs);
    timer.unref();
    ws.once('close', () => clearTimeout(timer));
  }

  private async pump(text: AsyncIterable<string>): Promise<void> {
    const iterator = text[Symbol.asyncIterator]();
    this.textIterator = iterator;
    try {
      for (;;) {
        // Read the first piece while the handshake runs: the LLM starts on this call.
        const next = await iterator.next();
        if (this.stopped()) return;
        if (next.done) break;
        const piece = next.value;
        // Whitespace makes no audio, and Deepgram would answer its Flush with nothing to mark.
        if (piece.trim().length === 0) continue;
        await this.socket.opened;
        if (this.stopped()) return;
        this.send({ type: 'Speak', text: piece });
        this.unflushed.push(piece);
        this.flushIfAllowed();
      }
      this.inputEnded = true;
      this.flushIfAllowed();
      this.checkComplete();
    } catch (err) {
      // The text source's own error (an LLM failure) is passed on unchanged.
      if (!this.stopped()) this.fail(err);
    }
  }

  private stopped(): boolean {
    return this.finished || this.failure !== undefined || this.ctx.signal.aborted;
  }

  private flushIfAllowed(): void {
    if (this.unflushed.length === 0 || this.stopped() || this.flushTimer) return;
    const nowMs = performance.now();
    const { count, windowMs } = this.config.flushLimit;
    while (this.flushTimesMs.length > 0 && nowMs - this.flushTimesMs[0]! >= windowMs) this.flushTimesMs.shift();
    if (this.flushTimesMs.length >= count) {
      // Over Deepgram's limit the Flush would be ignored: wait, and flush everything pending then.
      const waitMs = windowMs - (nowMs - this.flushTimesMs[0]!) + 1;
      this.log.debug({ provider: PROVIDER, waitMs }, 'flush limit reached; deferring');
      this.flushTimer = setTimeout(() => {
        this.flushTimer = undefined;
        this.flushIfAllowed();
        this.checkComplete();
      }, waitMs);
      return;
    }
    this.sendFrame(FLUSH_FRAME);
    this.flushTimesMs.push(nowMs);
    this.awaiting.push(this.unflushed);
    this.unflushed = [];
    this.armWatchdog();
  }

  private onAudio(audio: Buffer): void {
    if (this.stopped()) return;
    if (this.awaiting.length > 0) this.armWatchdog();
    this.queue.push({ type: 'audio', audio: new Uint8Array(audio.buffer, audio.byteOffset, audio.byteLength) });
    this.wakeUp();
  }

  private onText(frame: string): void {
    if (this.stopped()) return;
    let json: unknown;
    try {
      json = JSON.parse(frame);
    } catch {
      this.log.debug({ provider: PROVIDER, chars: frame.length }, 'skipped a frame that is not JSON');
      return;
    }
    const envelope = messageEnvelope.safeParse(json);
    if (!envelope.success || !SPEAK_SERVER_MESSAGE_TYPES.has(envelope.data.type)) {
      this.log.debug({ provider: PROVIDER, type: envelope.data?.type }, 'skipped a message of unknown type');
      return;
    }
    const parsed = speakServerMessage.safeParse(json);
    if (!parsed.success) {
      this.log.debug({ provider: PROVIDER, type: envelope.data.type }, 'skipped a malformed message');
      return;
    }
    const message = parsed.data;
    switch (message.type) {
      case 'Flushed':
        // A Flushed that is not the next in sequence answers nothing this reply sent.
        if (message.sequence_id !== undefined && message.sequence_id !== this.expectedSequenceId) {
          this.log.debug({ provider: PROVIDER, sequenceId: message.sequence_id }, 'skipped a Flushed out of sequence');
          return;
        }
        this.onFlushed();
        return;
      case 'Warning':
        this.log.warn(
          { provider: PROVIDER, code: message.code, description: message.description },
          'text-to-speech warning',
        );
        return;
      case 'Metadata':
        this.log.debug(
          { provider: PROVIDER, requestId: message.request_id, model: message.model_name },
          'text-to-speech metadata',
        );
        return;
      case 'Cleared':
        return;
    }
  }

  private onFlushed(): void {
    const pieces = this.awaiting.shift();
    if (!pieces) {
      this.log.debug({ provider: PROVIDER }, 'skipped a Flushed with no flush pending');
      return;
    }
    this.expectedSequenceId += 1;
    if (this.awaiting.length > 0) this.armWatchdog();
    else {
      clearTimeout(this.watchdog);
      this.watchdog = undefined;
    }
    for (const piece of pieces) this.queue.push({ type: 'spoken', text: piece });
    this.checkComplete();
    this.wakeUp();
  }

  private onClose(code: number, reason: string): void {
    if (this.stopped() || this.complete) return;
    // 1008 is Deepgram refusing what it was sent; trying the same again would not help.
    this.fail(
      new ProviderError(
        PROVIDER,
        `the connection closed before the reply was spoken (code ${code}${reason ? ` ${reason}` : ''})`,
        code !== CLOSE.policyViolation,
      ),
    );
  }

  private checkComplete(): void {
    if (
      this.inputEnded &&
      this.unflushed.length === 0 &&
      this.awaiting.length === 0 &&
      !this.flushTimer &&
      !this.complete
    ) {
      this.complete = true;
      this.wakeUp();
    }
  }

  /** The vendor went silent while audio was due. */
  private armWatchdog(): void {
    if (this.watchdog) {
      this.watchdog.refresh();
      return;
    }
    this.watchdog = setTimeout(() => {
      this.watchdog = undefined;
      this.fail(new ProviderError(PROVIDER, `no audio within ${this.config.timeoutMs} ms`, true));
    }, this.config.timeoutMs);
  }

  private fail(error: unknown): void {
    if (this.failure !== undefined || this.finished || this.complete) return;
    this.failure = error;
    this.wakeUp();
  }

  private send(message: SpeakClientMessage): void {
    this.sendFrame(JSON.stringify(message));
  }

  private sendFrame(frame: string): void {
    const ws = this.socket.ws;
    if (ws.readyState !== WebSocket.OPEN) {
      this.fail(new ProviderError(PROVIDER, 'the connection is closed', true));
      return;
    }
    ws.send(frame);
  }

  private wakeUp(): void {
    const wake = this.wake;
    this.wake = undefined;
    wake?.();
  }
}
