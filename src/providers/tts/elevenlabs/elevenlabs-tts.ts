import type { Logger } from 'pino';
import type { EndpointGuard } from '../../endpoint.js';
import { type ProviderContext, ProviderError, type TtsOutput, type TtsProvider } from '../../types.js';
import { type AudioFormat, MULAW_8K } from '../../../audio/audio-format.js';
import { SocketReply } from '../socket-reply.js';
import { type ParsedFrame, TtsSocket } from '../tts-socket.js';
import { isRetryableCloseCode, oneLine } from '../../vendor-errors.js';
import { type Alignment, type ElevenLabsServerMessage, serverMessage } from './elevenlabs-messages.js';
import { CLOSE } from '../../../shared/close-codes.js';

const PROVIDER = 'elevenlabs';

export interface ElevenLabsTtsConfig {
  /** The full websocket URL: `wss://…/v1/text-to-speech/{voice}/multi-stream-input?model_id=…&output_format=ulaw_8000…`. */
  url: string;
  apiKey: string;
  /** Fields of each context's first message: voice_settings, generation_config, pronunciation_dictionary_locators. */
  initFields: Record<string, unknown>;
  /**
   * Vendor silence allowed while audio is due: the handshake, from the first text sent to the
   * first audio, and between messages once the reply's text has ended.
   */
  timeoutMs: number;
  /** A socket with no reply in progress is closed after this long; the next reply reconnects. */
  idleCloseMs: number;
  /** Set for a bot's own base_url: connections check the addresses its host resolves to. */
  guard?: EndpointGuard;
}

/**
 * ElevenLabs over the multi-context websocket (docs/providers.md section 5b), 8 kHz mu-law out. One
 * socket per call, opened when the first reply starts and reused by later replies (one context
 * each), closed when idle. A reply's context starts with `text: " "` and the voice settings,
 * takes each piece as text ending in a space, and at the end of the reply is flushed and closed,
 * so that `isFinal` follows the last audio. Character alignments tell which words the audio so far
 * covers; those are reported as spoken. Barge-in (ctx.signal) sends `close_context` and drops
 * whatever still arrives for the context.
 */
export class ElevenLabsTts implements TtsProvider {
  readonly name = PROVIDER;
  readonly outputFormat: AudioFormat = MULAW_8K;
  private socket: TtsSocket<ElevenLabsServerMessage> | undefined;

  constructor(readonly config: ElevenLabsTtsConfig) {}

  async *synthesize(text: AsyncIterable<string>, ctx: ProviderContext): AsyncIterable<TtsOutput> {
    if (ctx.signal.aborted) return;
    // Connect (or reuse the open socket) now, while the LLM is still producing the first piece.
    if (!this.socket || this.socket.closed) this.socket = this.connect(ctx.log);
    yield* new ElevenLabsReply(this.socket, this.config, ctx).run(text);
  }

  warmUp(log: Logger): void {
    if (!this.socket || this.socket.closed) this.socket = this.connect(log);
  }

  close(): void {
    const socket = this.socket;
    this.socket = undefined;
    // close_socket makes ElevenLabs end every context and the connection cleanly.
    socket?.close(() => socket.send({ close_socket: true }));
  }

  private connect(log: Logger): TtsSocket<ElevenLabsServerMessage> {
    const config = this.config;
    return new TtsSocket<ElevenLabsServerMessage>(
      {
        provider: PROVIDER,
        url: config.url,
        lookup: config.guard?.lookup,
        headers: { 'xi-api-key': config.apiKey },
        secret: config.apiKey,
        timeoutMs: config.timeoutMs,
        idleCloseMs: config.idleCloseMs,
        parse: parseElevenLabsFrame,
      },
      log,
    );
  }
}

function parseElevenLabsFrame(json: unknown, log: Logger): ParsedFrame<ElevenLabsServerMessage> | undefined {
  const parsed = serverMessage.safeParse(json);
  if (!parsed.success) {
    log.debug(
      { provider: PROVIDER, issues: parsed.error.issues.map((i) => i.path.join('.')) },
      'skipped a malformed message',
    );
    return undefined;
  }
  const message = parsed.data;
  const contextId = message.contextId ?? message.context_id ?? undefined;
  if (message.error == null && message.audio == null && message.isFinal !== true) {
    // Alignment-only or bookkeeping messages ({"type":"flush_done"}) carry nothing this adapter uses.
    log.debug({ provider: PROVIDER, type: message.type }, 'skipped a message of unknown type');
    return undefined;
  }
  // An error about no context in particular (the key, an idle socket) fails every reply on the socket.
  const connectionError = message.error != null && contextId === undefined ? elevenLabsError(message) : undefined;
  return { contextId, message, connectionError };
}

/** One reply: one ElevenLabs context, from its initialisation to `isFinal` (or an abort). */
class ElevenLabsReply extends SocketReply<ElevenLabsServerMessage> {
  /** Whitespace-terminated words seen in the alignments so far, and whether one is under way. */
  private alignedWords = 0;
  private inWord = false;

  constructor(
    socket: TtsSocket<ElevenLabsServerMessage>,
    private readonly config: ElevenLabsTtsConfig,
    ctx: ProviderContext,
  ) {
    super(socket, PROVIDER, config.timeoutMs, ctx);
  }

  onMessage(message: ElevenLabsServerMessage): void {
    if (this.finished) return;
    if (message.error != null) {
      this.fail(elevenLabsError(message));
      return;
    }
    if (message.audio) {
      this.audio(Buffer.from(message.audio, 'base64'));
      // The original text's alignment; the normalised one may spell numbers out.
      const chars = message.alignment ?? message.normalizedAlignment;
      if (chars) this.heard(this.countWords(chars));
    }
    if (message.isFinal === true) this.complete();
  }

  protected sendPiece(piece: string): void {
    if (!this.started) {
      // The context's first message carries its settings; a keepalive must never come first.
      this.socket.send({ text: ' ', context_id: this.contextId, ...this.config.initFields });
    }
    // The vendor wants every chunk of text to end with a space, and the sentence splitter trims.
    this.socket.send({ text: /\s$/.test(piece) ? piece : `${piece} `, context_id: this.contextId });
  }

  protected sendEndOfInput(): void {
    // Flush what is buffered, then close: the flush completes first, and isFinal follows the last audio.
    this.socket.send({ context_id: this.contextId, flush: true });
    this.socket.send({ context_id: this.contextId, close_context: true });
  }

  protected sendCancel(): void {
    this.socket.send({ context_id: this.contextId, close_context: true });
  }

  /** Words of the reply the alignments have completed (a word ends at the whitespace after it). */
  private countWords(alignment: Alignment): number {
    for (const char of alignment.chars) {
      if (/^\s+$/.test(char)) {
        if (this.inWord) this.alignedWords += 1;
        this.inWord = false;
      } else if (char.length > 0) {
        this.inWord = true;
      }
    }
    return this.alignedWords;
  }
}

function elevenLabsError(message: ElevenLabsServerMessage): ProviderError {
  const error = message.error;
  const kind = typeof error === 'string' ? error : undefined;
  const text = (typeof error === 'object' && error ? error.message : undefined) ?? message.message ?? undefined;
  const detail = oneLine([kind, text].filter(Boolean).join(': ')) || 'unknown error';
  const code = message.code;
  const retryable =
    typeof code === 'number'
      ? isRetryableCloseCode(code) && code !== CLOSE.normal
      : /rate|internal|unavailable|overload|timeout|server/i.test(kind ?? '');
  return new ProviderError(PROVIDER, `error: ${detail}`, retryable);
}
