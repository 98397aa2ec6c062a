import { STATUS_CODES, type IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { type RawData, type WebSocket, WebSocketServer } from 'ws';
import {
  type CartesiaEncoding,
  type GenerationRequest,
  cancelRequest,
  generationRequest,
} from '../../providers/tts/cartesia/cartesia-messages.js';
import {
  bearer,
  describeIssues,
  frameText,
  header,
  isObject,
  pushBounded,
  recordedHeaders,
  redactQuery,
  send,
  SPEECH_MS_PER_CHAR,
  speechDurationMs,
  toneAudio,
  type ToneEncoding,
  type ToneFormat,
  ToneStream,
  writeHttpError,
} from './emulator-kit.js';
import { DEFAULT_EMULATOR_LATENCIES, type EmulatorLatencies, type VendorEmulator } from './types.js';
import { FaultPlan } from './fault-plan.js';

/**
 * Cartesia's TTS websocket (docs/providers.md section 4), emulated: `/tts/websocket` with the key as
 * `Authorization: Bearer`, `X-API-Key` or `?api_key=`, and a required Cartesia-Version (header or
 * `?cartesia_version=`). Client messages are validated with the adapter's zod schemas; a bad one
 * gets Cartesia's `error` message. Contexts are routed by context_id: each transcript becomes
 * tone audio (60 ms per character) in the requested output_format, preceded by its word
 * timestamps when `add_timestamps` is set; `flush` answers `flush_done`; `continue: false` (or a
 * request without `continue`) ends the input and `done` follows the last audio; `cancel` stops
 * the context at once (no `done`, as Cartesia does not promise one).
 *
 * Cost per context: one timer per audio chunk (100 ms of audio by default), tone bytes copied
 * from a cached one-second buffer, so hundreds of concurrent calls stay cheap.
 */

export interface CartesiaEmulatorOptions {
  /** ttsFirstByteMs and ttsRealTimeFactor apply. */
  latencies?: Partial<EmulatorLatencies>;
  /** The one key accepted; by default any non-empty key is. */
  apiKey?: string;
  /** Audio per chunk message, in ms of audio. Default 100. */
  chunkMs?: number;
  /** After a cancel, send this many chunks of the cancelled context anyway, to test a client's filter. Default 0. */
  staleChunksAfterCancel?: number;
  /** Connections and contexts kept in the logs (oldest dropped first). Default 500. */
  maxRecorded?: number;
}

export interface RecordedCartesiaConnection {
  id: number;
  /** Path and query, with any key in the query replaced by [redacted]. */
  path: string;
  /** Handshake headers; those carrying keys read [redacted]. */
  headers: Record<string, string>;
  /** The Cartesia-Version used (header or query). */
  version: string | undefined;
  /** Client frames in order: the parsed JSON, or `{ unparsable: <chars> }`. At most 1000 kept. */
  messages: unknown[];
  /** Set once the socket closed. */
  closeCode?: number;
}

export interface RecordedCartesiaContext {
  contextId: string;
  connectionId: number;
  /** Every generation request of the context, in order. */
  requests: GenerationRequest[];
  /** The non-empty transcripts, in order. */
  transcripts: string[];
  /** `continue: false` was received. */
  inputEnded: boolean;
  cancelled: boolean;
  /** `done` was sent. */
  done: boolean;
  /** The error message sent for the context, if any. */
  error?: string;
  /** Audio sent, in bytes of the requested encoding (decoded from base64). */
  audioBytes: number;
  chunks: number;
  /** Chunks sent after the cancel was processed; only staleChunksAfterCancel produces any. */
  chunksAfterCancel: number;
}

export interface CartesiaEmulatorStats {
  connections: number;
  activeConnections: number;
  contexts: number;
  cancels: number;
  audioBytes: number;
}

interface Segment {
  text: string;
  flushId: number;
}

interface EmulatedContext {
  record: RecordedCartesiaContext;
  stream: ToneStream;
  addTimestamps: boolean;
  /** Transcripts waiting to be voiced, and flush markers (a number: the flush id to acknowledge). */
  queue: Array<Segment | number>;
  flushCount: number;
  playing: boolean;
  /** Seconds of audio produced so far: the timestamps' origin for the next segment. */
  producedSec: number;
  hang: boolean;
  malformed: boolean;
  finished: boolean;
}

const DEFAULT_CHUNK_MS = 100;
const DEFAULT_MAX_RECORDED = 500;
const MAX_RECORDED_MESSAGES = 1000;
const NON_ERROR_STATUS = 206;

const ENCODINGS: Record<CartesiaEncoding, ToneEncoding> = {
  pcm_mulaw: 'mulaw',
  pcm_alaw: 'alaw',
  pcm_s16le: 's16le',
  pcm_f32le: 'f32le',
};

export class CartesiaEmulator implements VendorEmulator {
  readonly vendor = 'cartesia';

  /**
   * Faults to play (fault-plan.ts): `reject` a handshake (with a Cartesia-style body), `drop` an
   * accepted socket, and for a new context: `stall` (it takes its text and never answers: no audio,
   * no done), `error` (an `error` message, status 500, instead of audio), `malformed` (its audio is
   * preceded by a frame that is not JSON and a message of unknown type).
   */
  readonly faults = new FaultPlan();

  readonly connections: RecordedCartesiaConnection[] = [];
  readonly contexts: RecordedCartesiaContext[] = [];
  /** Context ids of the cancels received, in order. */
  readonly cancels: string[] = [];
  readonly stats: CartesiaEmulatorStats = {
    connections: 0,
    activeConnections: 0,
    contexts: 0,
    cancels: 0,
    audioBytes: 0,
  };

  private readonly latencies: EmulatorLatencies;
  private readonly expectedKey: string | undefined;
  private readonly chunkMs: number;
  private readonly staleChunksAfterCancel: number;
  private readonly maxRecorded: number;
  private readonly wss = new WebSocketServer({ noServer: true, perMessageDeflate: false });
  private readonly sockets = new Set<WebSocket>();
  private readonly live = new Set<EmulatedContext>();
  private nextConnectionId = 1;

  constructor(options: CartesiaEmulatorOptions = {}) {
    this.latencies = { ...DEFAULT_EMULATOR_LATENCIES, ...options.latencies };
    this.expectedKey = options.apiKey;
    this.chunkMs = options.chunkMs ?? DEFAULT_CHUNK_MS;
    this.staleChunksAfterCancel = options.staleChunksAfterCancel ?? 0;
    this.maxRecorded = options.maxRecorded ?? DEFAULT_MAX_RECORDED;
  }

  /** The recorded context with this id (the latest, if an id was reused). */
  context(contextId: string): RecordedCartesiaContext | undefined {
    return this.contexts.findLast((c) => c.contextId === contextId);
  }

  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): boolean {
    const url = new URL(req.url ?? '/', 'http://emulator');
    if (!url.pathname.endsWith('/tts/websocket')) return false;

    const reject = this.faults.take(['reject']);
    if (reject) {
      writeHttpError(
        socket,
        reject.status,
        reject.body ?? {
          title: STATUS_CODES[reject.status] ?? 'Error',
          message: reject.message ?? `emulated failure (HTTP ${reject.status})`,
        },
      );
      return true;
    }
    const key =
      bearer(req) ??
      header(req, 'x-api-key') ??
      url.searchParams.get('api_key') ??
      url.searchParams.get('access_token') ??
      undefined;
    if (!key || (this.expectedKey !== undefined && key !== this.expectedKey)) {
      writeHttpError(socket, 401, { title: 'Unauthorized', message: key ? 'Invalid API key' : 'Missing API key' });
      return true;
    }
    const version = url.searchParams.get('cartesia_version') ?? header(req, 'cartesia-version');
    if (!version) {
      writeHttpError(socket, 400, {
        title: 'Bad Request',
        message: 'A Cartesia-Version header or cartesia_version query parameter is required',
      });
      return true;
    }

    const record: RecordedCartesiaConnection = {
      id: this.nextConnectionId++,
      path: redactQuery(url, ['api_key', 'access_token']),
      headers: recordedHeaders(req, ['authorization', 'x-api-key']),
      version,
      messages: [],
    };
    pushBounded(this.connections, record, this.maxRecorded);
    this.stats.connections += 1;
    this.wss.handleUpgrade(req, socket, head, (ws) => this.onConnection(ws, record));
    return true;
  }

  close(): void {
    for (const context of this.live) context.stream.stop();
    this.live.clear();
    for (const ws of this.sockets) ws.terminate();
    this.sockets.clear();
  }

  // ---- one socket ----

  private onConnection(ws: WebSocket, record: RecordedCartesiaConnection): void {
    this.sockets.add(ws);
    this.stats.activeConnections += 1;
    const contexts = new Map<string, EmulatedContext>();
    let dropTimer: NodeJS.Timeout | undefined;
    const drop = this.faults.take(['drop']);
    if (drop) dropTimer = setTimeout(() => ws.terminate(), drop.afterMs);
    ws.on('message', (data, isBinary) => this.onFrame(ws, record, contexts, data, isBinary));
    ws.on('close', (code) => {
      clearTimeout(dropTimer);
      record.closeCode = code;
      this.sockets.delete(ws);
      this.stats.activeConnections -= 1;
      for (const context of contexts.values()) this.finish(context);
    });
  }

  private onFrame(
    ws: WebSocket,
    record: RecordedCartesiaConnection,
    contexts: Map<string, EmulatedContext>,
    data: RawData,
    isBinary: boolean,
  ): void {
    if (isBinary) {
      pushBounded(record.messages, { binary: true }, MAX_RECORDED_MESSAGES);
      send(ws, errorMessage(undefined, 400, 'Invalid request', 'binary frames are not supported'));
      return;
    }
    const text = frameText(data);
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      pushBounded(record.messages, { unparsable: text.length }, MAX_RECORDED_MESSAGES);
      send(ws, errorMessage(undefined, 400, 'Invalid request', 'the message is not valid JSON'));
      return;
    }
    pushBounded(record.messages, json, MAX_RECORDED_MESSAGES);
    const contextId = isObject(json) && typeof json.context_id === 'string' ? json.context_id : undefined;

    if (isObject(json) && json.cancel !== undefined) {
      const cancel = cancelRequest.safeParse(json);
      if (!cancel.success) {
        send(ws, errorMessage(contextId, 400, 'Invalid request', describeIssues(cancel.error.issues)));
        return;
      }
      this.cancel(ws, contexts.get(cancel.data.context_id), cancel.data.context_id);
      return;
    }

    const parsed = generationRequest.safeParse(json);
    if (!parsed.success) {
      send(ws, errorMessage(contextId, 400, 'Invalid request', describeIssues(parsed.error.issues)));
      return;
    }
    const request = parsed.data;
    let context = contexts.get(request.context_id);
    if (context?.finished) {
      // (inference) A context is not reopened once its input ended or it was cancelled; clients use a new id.
      send(
        ws,
        errorMessage(
          request.context_id,
          400,
          'Invalid request',
          `context ${request.context_id} is closed; use a new context_id`,
        ),
      );
      return;
    }
    if (!context) {
      context = this.openContext(record, request);
      contexts.set(request.context_id, context);
      if (this.faults.take(['error'])) {
        context.record.requests.push(request);
        this.fail(ws, context, 500, 'Internal server error', 'emulated failure');
        return;
      }
    }
    this.accept(ws, context, request);
  }

  private openContext(connection: RecordedCartesiaConnection, request: GenerationRequest): EmulatedContext {
    const record: RecordedCartesiaContext = {
      contextId: request.context_id,
      connectionId: connection.id,
      requests: [],
      transcripts: [],
      inputEnded: false,
      cancelled: false,
      done: false,
      audioBytes: 0,
      chunks: 0,
      chunksAfterCancel: 0,
    };
    pushBounded(this.contexts, record, this.maxRecorded);
    this.stats.contexts += 1;
    const format: ToneFormat = {
      encoding: ENCODINGS[request.output_format.encoding],
      sampleRateHz: request.output_format.sample_rate,
    };
    const context: EmulatedContext = {
      record,
      stream: new ToneStream(format, {
        firstByteMs: this.latencies.ttsFirstByteMs,
        realTimeFactor: this.latencies.ttsRealTimeFactor,
        chunkMs: this.chunkMs,
      }),
      addTimestamps: request.add_timestamps === true,
      queue: [],
      flushCount: 0,
      playing: false,
      producedSec: 0,
      hang: this.faults.take(['stall']) !== undefined,
      malformed: this.faults.take(['malformed']) !== undefined,
      finished: false,
    };
    this.live.add(context);
    return context;
  }

  private accept(ws: WebSocket, context: EmulatedContext, request: GenerationRequest): void {
    context.record.requests.push(request);
    if (request.transcript.trim().length > 0) {
      context.record.transcripts.push(request.transcript);
      context.queue.push({ text: request.transcript, flushId: context.flushCount + 1 });
    }
    if (request.flush === true) {
      context.flushCount += 1;
      context.queue.push(context.flushCount);
    }
    if (request.continue !== true) {
      context.record.inputEnded = true;
      context.finished = true;
    }
    this.pump(ws, context);
  }

  /** Voices the queue in order, one segment at a time; `done` once the input ended and all is voiced. */
  private pump(ws: WebSocket, context: EmulatedContext): void {
    const record = context.record;
    if (context.playing || context.hang || record.cancelled || record.error !== undefined || record.done) return;
    while (context.queue.length > 0) {
      const item = context.queue.shift()!;
      if (typeof item === 'number') {
        send(ws, {
          type: 'flush_done',
          context_id: record.contextId,
          done: false,
          flush_done: true,
          flush_id: item,
          status_code: NON_ERROR_STATUS,
        });
        continue;
      }
      this.play(ws, context, item);
      return;
    }
    if (record.inputEnded) {
      record.done = true;
      send(ws, { type: 'done', context_id: record.contextId, done: true, status_code: NON_ERROR_STATUS });
      this.live.delete(context);
    }
  }

  private play(ws: WebSocket, context: EmulatedContext, segment: Segment): void {
    const record = context.record;
    const text = segment.text.trim();
    if (context.addTimestamps) send(ws, this.timestamps(context, text, segment.flushId));
    context.producedSec += speechDurationMs(text) / 1000;
    context.playing = true;
    const stepMs = Math.round(this.chunkMs / Math.max(this.latencies.ttsRealTimeFactor, 1e-3));
    context.stream.play(
      speechDurationMs(text),
      (audio) => {
        if (context.malformed) {
          context.malformed = false;
          ws.send('{"type": "chunk", "context_id": ');
          send(ws, {
            type: 'emulator_notice',
            context_id: record.contextId,
            note: 'a message type clients do not know',
          });
        }
        record.audioBytes += audio.length;
        record.chunks += 1;
        this.stats.audioBytes += audio.length;
        send(ws, {
          type: 'chunk',
          context_id: record.contextId,
          data: audio.toString('base64'),
          done: false,
          status_code: NON_ERROR_STATUS,
          step_time: stepMs,
          flush_id: segment.flushId,
        });
      },
      () => {
        context.playing = false;
        this.pump(ws, context);
      },
    );
  }

  private timestamps(context: EmulatedContext, text: string, flushId: number): object {
    const words: string[] = [];
    const start: number[] = [];
    const end: number[] = [];
    for (const match of text.matchAll(/\S+/g)) {
      const startSec = context.producedSec + (match.index * SPEECH_MS_PER_CHAR) / 1000;
      words.push(match[0]);
      start.push(round3(startSec));
      end.push(round3(startSec + (match[0].length * SPEECH_MS_PER_CHAR) / 1000));
    }
    return {
      type: 'timestamps',
      context_id: context.record.contextId,
      done: false,
      status_code: NON_ERROR_STATUS,
      flush_id: flushId,
      word_timestamps: { words, start, end },
    };
  }

  private cancel(ws: WebSocket, context: EmulatedContext | undefined, contextId: string): void {
    this.cancels.push(contextId);
    if (this.cancels.length > this.maxRecorded) this.cancels.shift();
    this.stats.cancels += 1;
    if (!context || context.record.cancelled) return;
    context.record.cancelled = true;
    this.finish(context);
    // Optionally, late audio of the cancelled context, as a real socket may still carry.
    for (let i = 0; i < this.staleChunksAfterCancel; i++) {
      const audio = toneAudio(
        context.stream.format,
        0,
        Math.round((this.chunkMs * context.stream.format.sampleRateHz) / 1000),
      );
      context.record.chunksAfterCancel += 1;
      send(ws, {
        type: 'chunk',
        context_id: contextId,
        data: audio.toString('base64'),
        done: false,
        status_code: NON_ERROR_STATUS,
      });
    }
  }

  private fail(ws: WebSocket, context: EmulatedContext, status: number, title: string, message: string): void {
    context.record.error = message;
    this.finish(context);
    send(ws, errorMessage(context.record.contextId, status, title, message));
  }

  private finish(context: EmulatedContext): void {
    context.finished = true;
    context.queue = [];
    context.stream.stop();
    this.live.delete(context);
  }
}

function errorMessage(contextId: string | undefined, status: number, title: string, message: string): object {
  return {
    type: 'error',
    ...(contextId === undefined ? {} : { context_id: contextId }),
    done: true,
    status_code: status,
    title,
    message,
    error_code: status >= 500 ? 'internal_error' : 'invalid_request',
    request_id: `emulated-${Date.now().toString(36)}`,
  };
}
function round3(value: number): number {
  return Math.round(value * 1000) / 1000;
}
