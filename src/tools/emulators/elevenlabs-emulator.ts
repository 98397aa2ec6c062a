import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { type RawData, type WebSocket, WebSocketServer } from 'ws';
import { type ClientMessage, clientMessage } from '../../providers/tts/elevenlabs/elevenlabs-messages.js';
import {
  SPEECH_MS_PER_CHAR,
  type ToneFormat,
  ToneStream,
  describeIssues,
  frameText,
  header,
  isObject,
  pushBounded,
  recordedHeaders,
  redactQuery,
  send,
  writeHttpError,
} from './emulator-kit.js';
import { ElevenLabsHttpEmulator, type RecordedElevenLabsSpeechRequest } from './elevenlabs-http-emulator.js';
import { DEFAULT_EMULATOR_LATENCIES, type EmulatorLatencies, type VendorEmulator } from './types.js';
import { CLOSE } from '../../shared/close-codes.js';
import { FaultPlan } from './fault-plan.js';

/**
 * ElevenLabs' multi-context TTS websocket (docs/providers.md section 5b), emulated:
 * `/v1/text-to-speech/{voice_id}/multi-stream-input?model_id=…&output_format=…`, the key in the
 * `xi-api-key` header (a wrong one is refused at the handshake with 401) or, without the header,
 * in the first message (`xi_api_key` or `xi-api-key`). Messages are validated with the adapter's
 * zod schema; a bad one gets an error message and a 1008 close.
 *
 * Contexts: the first message for a context id creates it. Text is buffered and voiced as tone
 * audio (60 ms per character) with per-chunk character alignments: at once with `auto_mode=true`
 * or `try_trigger_generation`, else once the buffer reaches the first `chunk_length_schedule`
 * value (default 120); `flush` voices the buffer and marks everything received so far as flushing.
 * `close_context` drops unflushed text and stops unflushed audio at once, lets a flush under way
 * complete (as documented), then sends `isFinal`. A context whose first message was a keepalive
 * (`text: ""`) without settings is refused with a 1008 close when settings arrive later (what
 * pipecat observed). `close_socket` finishes the flushing contexts and closes. The socket closes
 * after `inactivity_timeout` seconds (default 20) without a message (unconfirmed: the error text
 * and the 1008 code).
 *
 * The same emulator answers ElevenLabs' HTTP text-to-speech (`POST /v1/text-to-speech/{voice_id}`
 * and `…/stream`, see ElevenLabsHttpEmulator), which is what ElevenLabs' own SDK streams from.
 *
 * Cost per context: one timer per audio chunk (100 ms of audio by default).
 */

export interface ElevenLabsEmulatorOptions {
  /** ttsFirstByteMs and ttsRealTimeFactor apply. */
  latencies?: Partial<EmulatorLatencies>;
  /** The one key accepted; by default any non-empty key is. */
  apiKey?: string;
  /** Audio per message, in ms of audio. Default 100. */
  chunkMs?: number;
  /** Connections and contexts kept in the logs (oldest dropped first). Default 500. */
  maxRecorded?: number;
}

export interface RecordedElevenLabsConnection {
  id: number;
  voiceId: string;
  /** Path and query, with any key in the query replaced by [redacted]. */
  path: string;
  query: Record<string, string>;
  /** Handshake headers; xi-api-key reads [redacted]. */
  headers: Record<string, string>;
  /** Client frames in order (keys redacted): the parsed JSON, or `{ unparsable: <chars> }`. At most 1000 kept. */
  messages: unknown[];
  closeCode?: number;
  closeReason?: string;
}

export interface RecordedElevenLabsContext {
  contextId: string;
  connectionId: number;
  /** The context's messages, in order (keys redacted). */
  messages: ClientMessage[];
  /** The non-blank texts, in order. */
  texts: string[];
  /** The voice_settings of the initialising message, if any. */
  voiceSettings?: unknown;
  flushes: number;
  /** close_context was received. */
  closed: boolean;
  /** isFinal was sent. */
  final: boolean;
  error?: string;
  audioBytes: number;
  chunks: number;
  /** Chunks sent after close_context was processed: only those of a flush under way. */
  chunksAfterClose: number;
}

export interface ElevenLabsEmulatorStats {
  connections: number;
  activeConnections: number;
  contexts: number;
  closeContexts: number;
  audioBytes: number;
}

interface Segment {
  /** The text voiced, leading whitespace removed; each character lasts SPEECH_MS_PER_CHAR. */
  text: string;
  /** Part of a flush: survives close_context. */
  flushing: boolean;
}

interface EmulatedContext {
  record: RecordedElevenLabsContext;
  stream: ToneStream;
  buffer: string;
  queue: Segment[];
  playing: Segment | undefined;
  closing: boolean;
  keepaliveFirst: boolean;
  scheduleChars: number;
  hang: boolean;
  malformed: boolean;
}

interface EmulatedSocket {
  ws: WebSocket;
  record: RecordedElevenLabsConnection;
  format: ToneFormat;
  autoMode: boolean;
  authenticated: boolean;
  inactivityMs: number;
  inactivityTimer?: NodeJS.Timeout;
  contexts: Map<string, EmulatedContext>;
  closingSocket: boolean;
}

const PATH = /\/v1\/text-to-speech\/([^/]+)\/multi-stream-input$/;
const DEFAULT_CHUNK_MS = 100;
const DEFAULT_MAX_RECORDED = 500;
const MAX_RECORDED_MESSAGES = 1000;
const DEFAULT_INACTIVITY_SECS = 20;
const MAX_INACTIVITY_SECS = 180;
const DEFAULT_SCHEDULE_CHARS = 120;
/** Used when a message names no context (unconfirmed: how the vendor names its default context). */
const DEFAULT_CONTEXT_ID = 'default';
const POLICY_VIOLATION = 1008;

/** Output formats the emulator can produce: the telephony codecs and raw PCM. */
function toneFormat(outputFormat: string): ToneFormat | undefined {
  if (outputFormat === 'ulaw_8000') return { encoding: 'mulaw', sampleRateHz: 8000 };
  if (outputFormat === 'alaw_8000') return { encoding: 'alaw', sampleRateHz: 8000 };
  const pcm = /^pcm_(8000|16000|22050|24000|32000|44100|48000)$/.exec(outputFormat);
  return pcm ? { encoding: 's16le', sampleRateHz: Number(pcm[1]) } : undefined;
}

export class ElevenLabsEmulator implements VendorEmulator {
  readonly vendor = 'elevenlabs';

  /**
   * Faults to play (fault-plan.ts): `reject` a handshake (with an ElevenLabs-style body), `drop`
   * an accepted socket, and for a new context: `stall` (it takes its text and never answers: no
   * audio, no isFinal), `error` (an error message instead of audio), `malformed` (its audio is
   * preceded by a frame that is not JSON and a message of unknown shape).
   */
  readonly faults = new FaultPlan();

  readonly connections: RecordedElevenLabsConnection[] = [];
  readonly contexts: RecordedElevenLabsContext[] = [];
  /** Context ids of the close_context messages received, in order. */
  readonly closeContexts: string[] = [];
  readonly stats: ElevenLabsEmulatorStats = {
    connections: 0,
    activeConnections: 0,
    contexts: 0,
    closeContexts: 0,
    audioBytes: 0,
  };

  private readonly latencies: EmulatorLatencies;
  private readonly expectedKey: string | undefined;
  private readonly chunkMs: number;
  private readonly maxRecorded: number;
  private readonly wss = new WebSocketServer({ noServer: true, perMessageDeflate: false });
  private readonly sockets = new Set<EmulatedSocket>();
  private readonly http: ElevenLabsHttpEmulator;
  private nextConnectionId = 1;

  constructor(options: ElevenLabsEmulatorOptions = {}) {
    this.latencies = { ...DEFAULT_EMULATOR_LATENCIES, ...options.latencies };
    this.expectedKey = options.apiKey;
    this.chunkMs = options.chunkMs ?? DEFAULT_CHUNK_MS;
    this.maxRecorded = options.maxRecorded ?? DEFAULT_MAX_RECORDED;
    this.http = new ElevenLabsHttpEmulator({
      latencies: this.latencies,
      expectedKey: this.expectedKey,
      chunkMs: this.chunkMs,
      maxRecorded: this.maxRecorded,
      toneFormat,
    });
  }

  /** HTTP text-to-speech requests, oldest first. */
  get speechRequests(): readonly RecordedElevenLabsSpeechRequest[] {
    return this.http.requests;
  }

  handleHttp(req: IncomingMessage, res: ServerResponse): boolean {
    return this.http.handleHttp(req, res);
  }

  /** The recorded context with this id (the latest, if an id was reused). */
  context(contextId: string): RecordedElevenLabsContext | undefined {
    return this.contexts.findLast((c) => c.contextId === contextId);
  }

  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): boolean {
    const url = new URL(req.url ?? '/', 'http://emulator');
    const match = PATH.exec(url.pathname);
    if (!match) return false;

    const reject = this.faults.take(['reject']);
    if (reject) {
      writeHttpError(
        socket,
        reject.status,
        reject.body ?? {
          detail: { status: 'emulated_failure', message: reject.message ?? `emulated failure (HTTP ${reject.status})` },
        },
      );
      return true;
    }
    const key = header(req, 'xi-api-key') ?? /^Bearer\s+(.+)$/i.exec(url.searchParams.get('authorization') ?? '')?.[1];
    if (key !== undefined && !this.keyAccepted(key)) {
      writeHttpError(socket, 401, { detail: { status: 'invalid_api_key', message: 'Invalid API key' } });
      return true;
    }
    const outputFormat = url.searchParams.get('output_format') ?? 'mp3_44100_128';
    const format = toneFormat(outputFormat);
    if (!format) {
      writeHttpError(socket, 400, {
        detail: {
          status: 'invalid_output_format',
          message: `the emulator produces ulaw_8000, alaw_8000 and pcm_* only, not ${outputFormat}`,
        },
      });
      return true;
    }
    const inactivitySecs = Number(url.searchParams.get('inactivity_timeout') ?? DEFAULT_INACTIVITY_SECS);
    if (!Number.isFinite(inactivitySecs) || inactivitySecs <= 0 || inactivitySecs > MAX_INACTIVITY_SECS) {
      writeHttpError(socket, 400, {
        detail: {
          status: 'invalid_request',
          message: `inactivity_timeout must be between 1 and ${MAX_INACTIVITY_SECS}`,
        },
      });
      return true;
    }

    const record: RecordedElevenLabsConnection = {
      id: this.nextConnectionId++,
      voiceId: decodeURIComponent(match[1]!),
      path: redactQuery(url, ['authorization']),
      query: Object.fromEntries(url.searchParams),
      headers: recordedHeaders(req, ['xi-api-key', 'authorization']),
      messages: [],
    };
    if (record.query.authorization) record.query.authorization = '[redacted]';
    pushBounded(this.connections, record, this.maxRecorded);
    this.stats.connections += 1;
    this.wss.handleUpgrade(req, socket, head, (ws) =>
      this.onConnection({
        ws,
        record,
        format,
        autoMode: url.searchParams.get('auto_mode') === 'true',
        authenticated: key !== undefined,
        inactivityMs: inactivitySecs * 1000,
        contexts: new Map(),
        closingSocket: false,
      }),
    );
    return true;
  }

  close(): void {
    this.http.close();
    for (const socket of this.sockets) {
      clearTimeout(socket.inactivityTimer);
      for (const context of socket.contexts.values()) context.stream.stop();
      socket.ws.terminate();
    }
    this.sockets.clear();
  }

  private keyAccepted(key: string): boolean {
    return key.length > 0 && (this.expectedKey === undefined || key === this.expectedKey);
  }

  // ---- one socket ----

  private onConnection(socket: EmulatedSocket): void {
    this.sockets.add(socket);
    this.stats.activeConnections += 1;
    let dropTimer: NodeJS.Timeout | undefined;
    const drop = this.faults.take(['drop']);
    if (drop) dropTimer = setTimeout(() => socket.ws.terminate(), drop.afterMs);
    this.touch(socket);
    socket.ws.on('message', (data, isBinary) => this.onFrame(socket, data, isBinary));
    socket.ws.on('close', (code, reason) => {
      clearTimeout(dropTimer);
      clearTimeout(socket.inactivityTimer);
      socket.record.closeCode = code;
      socket.record.closeReason = reason.toString();
      this.sockets.delete(socket);
      this.stats.activeConnections -= 1;
      for (const context of socket.contexts.values()) context.stream.stop();
      socket.contexts.clear();
    });
  }

  /** Restarts the inactivity timer: the vendor closes sockets that receive nothing for a while. */
  private touch(socket: EmulatedSocket): void {
    clearTimeout(socket.inactivityTimer);
    socket.inactivityTimer = setTimeout(() => {
      const secs = socket.inactivityMs / 1000;
      this.refuse(
        socket,
        'input_timeout_exceeded',
        `Have not received new text for ${secs} seconds; the connection is being closed.`,
      );
    }, socket.inactivityMs);
  }

  private onFrame(socket: EmulatedSocket, data: RawData, isBinary: boolean): void {
    this.touch(socket);
    const record = socket.record;
    if (isBinary) {
      pushBounded(record.messages, { binary: true }, MAX_RECORDED_MESSAGES);
      this.refuse(socket, 'invalid_message', 'binary frames are not supported');
      return;
    }
    const text = frameText(data);
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      pushBounded(record.messages, { unparsable: text.length }, MAX_RECORDED_MESSAGES);
      this.refuse(socket, 'invalid_message', 'the message is not valid JSON');
      return;
    }
    const parsed = clientMessage.safeParse(json);
    const redacted = isObject(json) ? redactKeys(json) : json;
    pushBounded(record.messages, redacted, MAX_RECORDED_MESSAGES);
    if (!parsed.success) {
      this.refuse(socket, 'invalid_message', describeIssues(parsed.error.issues));
      return;
    }
    const message = parsed.data;
    if (!socket.authenticated) {
      const key = message.xi_api_key ?? message['xi-api-key'];
      if (key === undefined || !this.keyAccepted(key)) {
        this.refuse(
          socket,
          'invalid_api_key',
          key === undefined ? 'An API key is required (xi-api-key header or first message)' : 'Invalid API key',
        );
        return;
      }
      socket.authenticated = true;
    }
    if (message.close_socket === true) {
      socket.closingSocket = true;
      for (const context of [...socket.contexts.values()]) this.closeContext(socket, context, false);
      this.closeSocketIfDone(socket);
      return;
    }
    if (message.context_id === undefined && message.text === '' && !message.flush && !message.close_context) return; // socket keepalive

    const contextId = message.context_id ?? DEFAULT_CONTEXT_ID;
    let context = socket.contexts.get(contextId);
    if (!context) {
      if (message.close_context === true) {
        this.closeContexts.push(contextId);
        this.stats.closeContexts += 1;
        return; // closing an unknown (already closed) context is a no-op
      }
      context = this.openContext(socket, contextId, message);
      if (this.faults.take(['error'])) {
        this.failContext(socket, context, 'emulated failure');
        return;
      }
    } else if (context.keepaliveFirst && message.voice_settings !== undefined) {
      this.refuse(
        socket,
        'invalid_context_initialization',
        'the context was started by a keepalive; settings can no longer be set',
      );
      return;
    }
    context.record.messages.push(redactKeys(message) as ClientMessage);
    this.accept(socket, context, message);
  }

  private openContext(socket: EmulatedSocket, contextId: string, first: ClientMessage): EmulatedContext {
    const record: RecordedElevenLabsContext = {
      contextId,
      connectionId: socket.record.id,
      messages: [],
      texts: [],
      voiceSettings: first.voice_settings,
      flushes: 0,
      closed: false,
      final: false,
      audioBytes: 0,
      chunks: 0,
      chunksAfterClose: 0,
    };
    pushBounded(this.contexts, record, this.maxRecorded);
    this.stats.contexts += 1;
    const context: EmulatedContext = {
      record,
      stream: new ToneStream(socket.format, {
        firstByteMs: this.latencies.ttsFirstByteMs,
        realTimeFactor: this.latencies.ttsRealTimeFactor,
        chunkMs: this.chunkMs,
      }),
      buffer: '',
      queue: [],
      playing: undefined,
      closing: false,
      keepaliveFirst: first.text === '' && first.voice_settings === undefined,
      scheduleChars: first.generation_config?.chunk_length_schedule?.[0] ?? DEFAULT_SCHEDULE_CHARS,
      hang: this.faults.take(['stall']) !== undefined,
      malformed: this.faults.take(['malformed']) !== undefined,
    };
    socket.contexts.set(contextId, context);
    return context;
  }

  private accept(socket: EmulatedSocket, context: EmulatedContext, message: ClientMessage): void {
    const record = context.record;
    if (message.text !== undefined && message.text.trim().length > 0) {
      record.texts.push(message.text);
      context.buffer += message.text;
      const trigger =
        socket.autoMode || message.try_trigger_generation === true || context.buffer.length >= context.scheduleChars;
      if (trigger && !message.flush) this.generate(context, false);
    }
    if (message.flush === true) {
      record.flushes += 1;
      this.generate(context, true);
      // Everything received so far is now being flushed, and survives a close_context.
      for (const segment of context.queue) segment.flushing = true;
      if (context.playing) context.playing.flushing = true;
    }
    if (message.close_context === true) {
      this.closeContexts.push(record.contextId);
      this.stats.closeContexts += 1;
      this.closeContext(socket, context, true);
      return;
    }
    this.pump(socket, context);
  }

  /** Turns the buffered text into a segment to voice. */
  private generate(context: EmulatedContext, flushing: boolean): void {
    const text = context.buffer.replace(/^\s+/, '');
    context.buffer = '';
    if (text.trim().length > 0) context.queue.push({ text, flushing });
  }

  /** close_context (or close_socket): unflushed text and audio end now; a flush under way completes first. */
  private closeContext(socket: EmulatedSocket, context: EmulatedContext, record: boolean): void {
    if (record) context.record.closed = true;
    context.closing = true;
    context.buffer = '';
    context.queue = context.queue.filter((segment) => segment.flushing);
    if (context.playing && !context.playing.flushing) {
      context.stream.stop();
      context.playing = undefined;
      context.queue = [];
    }
    this.pump(socket, context);
  }

  private pump(socket: EmulatedSocket, context: EmulatedContext): void {
    if (context.playing || context.hang || context.record.error !== undefined) return;
    const next = context.queue.shift();
    if (next) {
      this.play(socket, context, next);
      return;
    }
    if (context.closing) {
      context.record.final = true;
      send(socket.ws, { isFinal: true, contextId: context.record.contextId });
      context.stream.stop();
      socket.contexts.delete(context.record.contextId);
      this.closeSocketIfDone(socket);
    }
  }

  private play(socket: EmulatedSocket, context: EmulatedContext, segment: Segment): void {
    const record = context.record;
    context.playing = segment;
    const chars = [...segment.text];
    context.stream.play(
      chars.length * SPEECH_MS_PER_CHAR,
      (audio, startMs, endMs) => {
        if (context.malformed) {
          context.malformed = false;
          socket.ws.send('{"audio": "AAAA", "contextId": ');
          send(socket.ws, { contextId: record.contextId, emulatorNotice: 'a message shape clients do not know' });
        }
        const first = Math.ceil(startMs / SPEECH_MS_PER_CHAR - 1e-9);
        const alignment = { chars: [] as string[], charStartTimesMs: [] as number[], charDurationsMs: [] as number[] };
        for (let i = first; i < chars.length && i * SPEECH_MS_PER_CHAR < endMs; i++) {
          alignment.chars.push(chars[i]!);
          alignment.charStartTimesMs.push(Math.round(i * SPEECH_MS_PER_CHAR - startMs));
          alignment.charDurationsMs.push(SPEECH_MS_PER_CHAR);
        }
        record.audioBytes += audio.length;
        record.chunks += 1;
        if (record.closed) record.chunksAfterClose += 1;
        this.stats.audioBytes += audio.length;
        send(socket.ws, {
          audio: audio.toString('base64'),
          alignment,
          normalizedAlignment: alignment,
          contextId: record.contextId,
        });
      },
      () => {
        context.playing = undefined;
        this.pump(socket, context);
      },
    );
  }

  private failContext(socket: EmulatedSocket, context: EmulatedContext, message: string): void {
    context.record.error = message;
    context.stream.stop();
    socket.contexts.delete(context.record.contextId);
    send(socket.ws, { error: 'internal_error', message, code: 1011, contextId: context.record.contextId });
  }

  /** A vendor-style error, then a policy-violation close. */
  private refuse(socket: EmulatedSocket, error: string, message: string): void {
    send(socket.ws, { error, message, code: POLICY_VIOLATION });
    socket.ws.close(POLICY_VIOLATION, message.slice(0, 120));
  }

  private closeSocketIfDone(socket: EmulatedSocket): void {
    if (socket.closingSocket && socket.contexts.size === 0) socket.ws.close(CLOSE.normal);
  }
}

function redactKeys<T extends Record<string, unknown>>(message: T): T {
  if (message.xi_api_key === undefined && message['xi-api-key'] === undefined) return message;
  const copy: Record<string, unknown> = { ...message };
  if (copy.xi_api_key !== undefined) copy.xi_api_key = '[redacted]';
  if (copy['xi-api-key'] !== undefined) copy['xi-api-key'] = '[redacted]';
  return copy as T;
}
