import type { Logger } from 'pino';
import type { EndpointGuard } from '../../endpoint.js';
import { type ProviderContext, ProviderError, type TtsOutput, type TtsProvider } from '../../types.js';
import { type AudioFormat, MULAW_8K } from '../../../audio/audio-format.js';
import {
  type CartesiaServerMessage,
  type ErrorMessage,
  type GenerationRequest,
  type OutputFormat,
  SERVER_MESSAGE_TYPES,
  isWellFormedChunk,
  serverEnvelope,
  serverMessage,
} from './cartesia-messages.js';
import { SocketReply } from '../socket-reply.js';
import { type ParsedFrame, TtsSocket } from '../tts-socket.js';
import { isRetryableStatus, oneLine } from '../../vendor-errors.js';

const PROVIDER = 'cartesia';

/** 8 kHz mu-law: raw G.711 bytes that go straight to the phone leg. */
export const CARTESIA_OUTPUT_FORMAT: OutputFormat = { container: 'raw', encoding: 'pcm_mulaw', sample_rate: 8000 };
const MULAW_BYTES_PER_SEC = 8000;
/** A word counts as heard once the audio received reaches its end time, give or take this much. */
const TIMESTAMP_TOLERANCE_SEC = 0.001;

export interface CartesiaTtsConfig {
  /** The full websocket URL, `wss://api.cartesia.ai/tts/websocket` or an override. */
  url: string;
  apiKey: string;
  /** Sent as the Cartesia-Version header. */
  version: string;
  voiceId: string;
  modelId: string;
  language: string | undefined;
  /** Merged into every generation request (service_options extras, the speed option). */
  extraFields: Record<string, unknown>;
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
 * Cartesia over its TTS websocket (docs/providers.md section 4). One socket per call, opened when the
 * first reply starts and reused by later replies (one context each, multiplexed by context_id),
 * closed when idle. Each reply's pieces stream into one context with `continue: true`, and an
 * empty transcript with `continue: false` ends its input; `done` ends the context. Word
 * timestamps tell which words the audio received so far covers; those are reported as spoken.
 * Barge-in (ctx.signal) sends `{context_id, cancel: true}` and drops whatever still arrives for
 * the context.
 */
export class CartesiaTts implements TtsProvider {
  readonly name = PROVIDER;
  readonly outputFormat: AudioFormat = MULAW_8K;
  private socket: TtsSocket<CartesiaServerMessage> | undefined;

  constructor(readonly config: CartesiaTtsConfig) {}

  async *synthesize(text: AsyncIterable<string>, ctx: ProviderContext): AsyncIterable<TtsOutput> {
    if (ctx.signal.aborted) return;
    // Connect (or reuse the open socket) now, while the LLM is still producing the first piece.
    if (!this.socket || this.socket.closed) this.socket = this.connect(ctx.log);
    yield* new CartesiaReply(this.socket, this.config, ctx).run(text);
  }

  warmUp(log: Logger): void {
    if (!this.socket || this.socket.closed) this.socket = this.connect(log);
  }

  close(): void {
    this.socket?.close();
    this.socket = undefined;
  }

  private connect(log: Logger): TtsSocket<CartesiaServerMessage> {
    const config = this.config;
    return new TtsSocket<CartesiaServerMessage>(
      {
        provider: PROVIDER,
        url: config.url,
        lookup: config.guard?.lookup,
        headers: { Authorization: `Bearer ${config.apiKey}`, 'Cartesia-Version': config.version },
        secret: config.apiKey,
        timeoutMs: config.timeoutMs,
        idleCloseMs: config.idleCloseMs,
        parse: parseCartesiaFrame,
      },
      log,
    );
  }
}

function parseCartesiaFrame(json: unknown, log: Logger): ParsedFrame<CartesiaServerMessage> | undefined {
  if (isWellFormedChunk(json)) return { contextId: json.context_id, message: json, connectionError: undefined };
  const envelope = serverEnvelope.safeParse(json);
  if (!envelope.success || !SERVER_MESSAGE_TYPES.has(envelope.data.type)) {
    log.debug({ provider: PROVIDER, type: envelope.data?.type }, 'skipped a message of unknown type');
    return undefined;
  }
  const parsed = serverMessage.safeParse(json);
  if (!parsed.success) {
    log.debug(
      { provider: PROVIDER, type: envelope.data.type, issues: parsed.error.issues.map((i) => i.path.join('.')) },
      'skipped a malformed message',
    );
    return undefined;
  }
  const message = parsed.data;
  // An error about no context in particular (a bad frame, the account) fails every reply on the socket.
  const connectionError =
    message.type === 'error' && message.context_id === undefined ? cartesiaError(message) : undefined;
  return { contextId: message.context_id, message, connectionError };
}

/** One reply: one Cartesia context, from the first piece to `done` (or an abort). */
class CartesiaReply extends SocketReply<CartesiaServerMessage> {
  private audioBytes = 0;
  /** End times (s) of the words the vendor reported, in order, and how many the audio covers. */
  private readonly wordEndsSec: number[] = [];
  private heardWords = 0;

  constructor(
    socket: TtsSocket<CartesiaServerMessage>,
    private readonly config: CartesiaTtsConfig,
    ctx: ProviderContext,
  ) {
    super(socket, PROVIDER, config.timeoutMs, ctx);
  }

  onMessage(message: CartesiaServerMessage): void {
    if (this.finished) return;
    switch (message.type) {
      case 'chunk': {
        const audio = Buffer.from(message.data, 'base64');
        this.audioBytes += audio.length;
        this.audio(audio);
        this.reportHeardWords();
        return;
      }
      case 'timestamps': {
        const { words, end } = message.word_timestamps;
        for (let i = 0; i < words.length && i < end.length; i++) this.wordEndsSec.push(end[i]!);
        this.reportHeardWords();
        this.vendorAlive();
        return;
      }
      case 'done':
        this.complete();
        return;
      case 'error':
        this.fail(cartesiaError(message));
        return;
      default:
        // flush_done, phoneme_timestamps: nothing to do, but the vendor is working.
        this.vendorAlive();
    }
  }

  protected sendPiece(piece: string): void {
    // Pieces are joined as-is at the vendor, and the sentence splitter trims them.
    this.socket.send(this.request(/\s$/.test(piece) ? piece : `${piece} `, true));
  }

  protected sendEndOfInput(): void {
    this.socket.send(this.request('', false));
  }

  protected sendCancel(): void {
    this.socket.send({ context_id: this.contextId, cancel: true });
  }

  private request(transcript: string, more: boolean): GenerationRequest {
    const config = this.config;
    const request: GenerationRequest = {
      // Pieces are whole sentences: generate at once instead of waiting for more text (default 3 s).
      max_buffer_delay_ms: 0,
      ...config.extraFields,
      context_id: this.contextId,
      model_id: config.modelId,
      transcript,
      voice: { mode: 'id', id: config.voiceId },
      output_format: CARTESIA_OUTPUT_FORMAT,
      continue: more,
      add_timestamps: true,
      use_normalized_timestamps: false,
    };
    if (config.language) request.language = config.language;
    return request;
  }

  /**
   * Reports the words the audio received so far covers. Counting the vendor's words against the
   * reply's own keeps the text exactly as generated; should the two tokenise differently the cut
   * is off by a word, and `done` hands out whatever is left.
   */
  private reportHeardWords(): void {
    const audioSec = this.audioBytes / MULAW_BYTES_PER_SEC;
    while (
      this.heardWords < this.wordEndsSec.length &&
      this.wordEndsSec[this.heardWords]! <= audioSec + TIMESTAMP_TOLERANCE_SEC
    ) {
      this.heardWords += 1;
    }
    this.heard(this.heardWords);
  }
}

function cartesiaError(message: ErrorMessage): ProviderError {
  const status = message.status_code;
  const text = [message.title, message.message ?? message.error].filter(Boolean).join(': ') || 'unknown error';
  const code = message.error_code ? ` (${message.error_code})` : '';
  const retryable = status !== undefined && isRetryableStatus(status);
  return new ProviderError(PROVIDER, `error${status ? ` ${status}` : ''}: ${oneLine(text)}${code}`, retryable);
}
