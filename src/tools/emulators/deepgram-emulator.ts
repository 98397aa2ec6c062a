import { createHash, randomUUID } from 'node:crypto';
import { type IncomingMessage, STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import alawmulaw from 'alawmulaw';
import { type RawData, type WebSocket, WebSocketServer } from 'ws';
import { decodeMulaw, encodeMulaw } from '../../audio/mulaw.js';
import {
  CLOSE_REASONS,
  type ResultsMessage,
  listenClientMessage,
} from '../../providers/stt/deepgram/deepgram-messages.js';
import {
  AURA_DEFAULT_ENCODING,
  AURA_DEFAULT_SAMPLE_RATE_HZ,
  AURA_ENCODINGS,
  AURA_FLUSH_LIMIT,
  AURA_SAMPLE_RATES_HZ,
  type AuraEncoding,
  speakClientMessage,
} from '../../providers/tts/deepgram-aura/aura-messages.js';
import { DEFAULT_EMULATOR_LATENCIES, type EmulatorLatencies, type VendorEmulator } from './types.js';

/**
 * Deepgram, emulated: live transcription on `/v1/listen` (docs/providers.md section 1) and Aura
 * text-to-speech on the `/v1/speak` websocket (section 6b), on one port.
 *
 * Handshakes are checked the way Deepgram does: `Authorization: Token <key>` (or `Bearer`, or the
 * browser subprotocols `token, <key>`), else HTTP 401 with a JSON body and a `dg-error` header;
 * query parameters that Deepgram would refuse get a 400. Every answer carries `dg-request-id`.
 *
 * `/v1/listen` decides speech by the energy of each 20 ms of decoded audio (mulaw, alaw or
 * linear16) against a threshold. When speech starts it sends SpeechStarted (with
 * `vad_events=true`); while it lasts, interim Results (with `interim_results=true`) whose text
 * grows word by word; once silence has lasted `endpointing` ms of audio and at least
 * sttFinalDelayMs of wall time has passed since the speech stopped, the final Results
 * (`is_final` and `speech_final`). Finalize answers at once with a final marked `from_finalize`
 * while speech not yet finalised is buffered, and with nothing at all otherwise (Deepgram only
 * says such a response may come); UtteranceEnd follows `utterance_end_ms` of audio without speech. Transcripts are taken in turn
 * from `transcripts`, per connection. CloseStream gets the last final, Metadata, then a 1000
 * close; ten seconds with neither audio nor KeepAlive close the socket with 1011 NET-0001.
 * Times in messages are seconds of audio received on that connection, like Deepgram's.
 *
 * `/v1/speak` buffers Speak text until Flush, then sends a tone in the requested encoding and
 * rate lasting ttsMsPerChar per character (divided by `speed`), in chunks, the first after
 * ttsFirstByteMs and the rest at ttsRealTimeFactor; `Flushed` (with its sequence_id) follows the
 * last chunk. More than 20 Flushes in 60 s get a Warning and are ignored, as Deepgram documents.
 * Clear drops pending text and audio and answers `Cleared`; Close closes with 1000.
 *
 * Cost: audio frames are counted and their energy summed from a lookup table; no JSON, logging
 * or allocation per frame. Results go out a few times a second per call, TTS audio as slices of
 * a cached tone, one timer per chunk. One interval timer checks every listen socket for idleness.
 */

export type DeepgramPath = 'listen' | 'speak';

export interface DeepgramEmulatorOptions {
  /** sttFinalDelayMs, ttsFirstByteMs and ttsRealTimeFactor apply. */
  latencies?: Partial<EmulatorLatencies>;
  /** The one key accepted; by default any non-empty key is. */
  apiKey?: string;
  /** Final transcripts, used in turn for each utterance of a connection. Default `["hello"]`. */
  transcripts?: string[];
  /** RMS (int16 units) above which 20 ms of audio counts as speech. Default 300 (about -41 dBFS). */
  speechRmsThreshold?: number;
  /** Audio ms between interim Results while speech lasts. Default 500. */
  interimIntervalMs?: number;
  /** A listen socket with neither audio nor KeepAlive for this long is closed (1011 NET-0001). Default 10000. */
  idleTimeoutMs?: number;
  /** Emulated speech per character of text. Default 60 ms. */
  ttsMsPerChar?: number;
  /** Audio per binary frame on `/v1/speak`, in ms (at most 1000). Default 100. */
  ttsChunkMs?: number;
  /** After a Clear, send this many more chunks of the cleared audio before `Cleared`, to test a client's filter. Default 0. */
  staleChunksAfterClear?: number;
  /** Connections kept in `log` (oldest dropped first). Default 500. */
  maxRecorded?: number;
}

export interface RecordedDeepgramConnection {
  id: number;
  path: DeepgramPath;
  /** The query as received; a repeated parameter (keyterm) is an array. */
  query: Record<string, string | string[]>;
  /** How the key came: the Authorization scheme, or the subprotocol form. Undefined when none came. */
  auth: 'token' | 'bearer' | 'subprotocol-token' | 'subprotocol-bearer' | undefined;
  requestId: string;
  /** The HTTP status when the handshake was refused. */
  rejectedStatus?: number;
  /** The handshake was left unanswered (hangNextHandshake). */
  hung?: boolean;
  /** The upgrade was held back this long (delayNextHandshake), ms. */
  delayedMs?: number;
  /** Client text frames in order: the parsed JSON, or `{ unparsable: <chars> }`. At most 1000 kept. */
  messages: unknown[];
  /** listen: audio bytes received; speak: audio bytes sent. */
  audioBytes: number;
  /** listen: binary frames received; speak: binary frames sent. */
  audioFrames: number;
  keepAlives: number;
  finalizes: number;
  /** listen: the audio bytes received before each Finalize, in order (at most 1000 kept). */
  audioBytesAtFinalize: number[];
  closeStreams: number;
  /** listen: Results messages sent (interim and final). */
  results: number;
  /** listen: the final Results sent, in order (at most 1000 kept): what ended each utterance. */
  finals: RecordedDeepgramFinal[];
  /** speak: the text of each Speak, in order (at most 1000 kept). */
  texts: string[];
  flushes: number;
  clears: number;
  closes: number;
  /** Set once the socket closed; 1006 when it was dropped without a close frame. */
  closeCode?: number;
  closeReason?: string;
}

export interface RecordedDeepgramFinal {
  transcript: string;
  /** Sent in answer to a Finalize, rather than by the emulator's own endpointing (or CloseStream). */
  fromFinalize: boolean;
  speechFinal: boolean;
}

export interface DeepgramEmulatorStats {
  connections: number;
  activeConnections: number;
  rejectedHandshakes: number;
  hungHandshakes: number;
  audioBytesReceived: number;
  audioBytesSent: number;
  results: number;
  keepAlives: number;
  finalizes: number;
  closeStreams: number;
  /** Listen sockets closed with NET-0001. */
  idleTimeouts: number;
  flushes: number;
  clears: number;
  closes: number;
}

interface FaultFilter {
  /** Only handshakes on this path; both by default. */
  path?: DeepgramPath;
  /** How many handshakes it applies to. Default 1; Infinity for all. */
  count?: number;
}

type FaultKind = 'reject' | 'hang' | 'delay' | 'stall' | 'drop';
interface Fault {
  kind: FaultKind;
  path: DeepgramPath | undefined;
  remaining: number;
  status?: number;
  message?: string;
  afterMs?: number;
}

const MAX_RECORDED_MESSAGES = 1000;
const WINDOW_MS = 20;
/** Interim text grows by one word per this much speech. */
const WORD_MS = 250;
/** With `endpointing=false`, silence this long still ends the utterance (with speech_final false). */
const NO_ENDPOINTING_FINAL_MS = 1000;
/** Deepgram's documented default for `endpointing`. */
const DEFAULT_ENDPOINTING_MS = 10;
const LISTEN_ENCODINGS = [
  'linear16',
  'linear32',
  'flac',
  'alaw',
  'mulaw',
  'amr-nb',
  'amr-wb',
  'opus',
  'ogg-opus',
  'speex',
  'g729',
];
const EMULATED_LISTEN_ENCODINGS = new Set(['mulaw', 'alaw', 'linear16']);
const DEFAULT_LISTEN_MODEL = 'base';
const DEFAULT_SPEAK_MODEL = 'aura-asteria-en';
const TONE_HZ = 440;

const ERROR_CODES: Record<number, string> = {
  400: 'Bad Request',
  401: 'INVALID_AUTH',
  402: 'ASR_PAYMENT_REQUIRED',
  403: 'INSUFFICIENT_PERMISSIONS',
  404: 'NOT_FOUND',
  429: 'TOO_MANY_REQUESTS',
};

interface Resolved {
  options: Required<Omit<DeepgramEmulatorOptions, 'latencies' | 'apiKey'>> & { apiKey: string | undefined };
  latencies: EmulatorLatencies;
  stats: DeepgramEmulatorStats;
}

interface Session {
  readonly ws: WebSocket;
  readonly record: RecordedDeepgramConnection;
  path: DeepgramPath;
  /** Accepts frames but never answers (stallNextConnection). */
  stalled: boolean;
  onMessage(data: Buffer, isBinary: boolean): void;
  dispose(): void;
}

export class DeepgramEmulator implements VendorEmulator {
  readonly vendor = 'deepgram';
  /** Every connection attempt, oldest first (bounded by maxRecorded). */
  readonly log: RecordedDeepgramConnection[] = [];
  readonly stats: DeepgramEmulatorStats = {
    connections: 0,
    activeConnections: 0,
    rejectedHandshakes: 0,
    hungHandshakes: 0,
    audioBytesReceived: 0,
    audioBytesSent: 0,
    results: 0,
    keepAlives: 0,
    finalizes: 0,
    closeStreams: 0,
    idleTimeouts: 0,
    flushes: 0,
    clears: 0,
    closes: 0,
  };
  private readonly resolved: Resolved;
  private readonly wss: WebSocketServer;
  private readonly sessions = new Set<Session>();
  private readonly listenSessions = new Set<ListenSession>();
  private readonly hungSockets = new Set<Duplex>();
  /** Handshakes waiting out delayNextHandshake, and their timers. */
  private readonly delayedUpgrades = new Map<Duplex, NodeJS.Timeout>();
  private readonly requestIds = new WeakMap<IncomingMessage, string>();
  private faults: Fault[] = [];
  private sweepTimer: NodeJS.Timeout | undefined;
  private nextId = 1;

  constructor(options: DeepgramEmulatorOptions = {}) {
    const transcripts = options.transcripts && options.transcripts.length > 0 ? [...options.transcripts] : ['hello'];
    this.resolved = {
      options: {
        apiKey: options.apiKey,
        transcripts,
        speechRmsThreshold: options.speechRmsThreshold ?? 300,
        interimIntervalMs: options.interimIntervalMs ?? 500,
        idleTimeoutMs: options.idleTimeoutMs ?? 10_000,
        ttsMsPerChar: options.ttsMsPerChar ?? 60,
        ttsChunkMs: Math.min(1000, Math.max(WINDOW_MS, options.ttsChunkMs ?? 100)),
        staleChunksAfterClear: options.staleChunksAfterClear ?? 0,
        maxRecorded: options.maxRecorded ?? 500,
      },
      latencies: { ...DEFAULT_EMULATOR_LATENCIES, ...options.latencies },
      stats: this.stats,
    };
    this.wss = new WebSocketServer({
      noServer: true,
      perMessageDeflate: false,
      // Browsers send the key as subprotocols `token, <key>`; the server picks `token`.
      handleProtocols: (protocols) => (protocols.has('token') ? 'token' : protocols.has('bearer') ? 'bearer' : false),
    });
    this.wss.on('headers', (headers, req) => {
      const requestId = this.requestIds.get(req);
      if (requestId) headers.push(`dg-request-id: ${requestId}`);
    });
  }

  // ---- failure switches (for tests) ----

  /** The next handshake(s) get this HTTP status (with Deepgram's error body) instead of an upgrade. */
  rejectNextHandshake(status: number, options: FaultFilter & { message?: string } = {}): void {
    this.addFault({ kind: 'reject', status, message: options.message }, options);
  }

  /** The next handshake(s) are never answered, so the client's handshake timeout fires. */
  hangNextHandshake(options: FaultFilter = {}): void {
    this.addFault({ kind: 'hang' }, options);
  }

  /**
   * The next handshake(s) are answered (upgraded) only `delayMs` after they arrive, as over a slow
   * TLS handshake or from a far region; a client that gives up meanwhile gets nothing.
   */
  delayNextHandshake(delayMs: number, options: FaultFilter = {}): void {
    this.addFault({ kind: 'delay', afterMs: delayMs }, options);
  }

  /** The next connection(s) upgrade, then never answer anything (no results, no audio). */
  stallNextConnection(options: FaultFilter = {}): void {
    this.addFault({ kind: 'stall' }, options);
  }

  /** The next connection(s) are dropped (no close frame, as on a network failure) `afterMs` after opening. */
  dropNextConnectionAfter(afterMs: number, options: FaultFilter = {}): void {
    this.addFault({ kind: 'drop', afterMs }, options);
  }

  /** Drops every open connection (on the path) now, without a close frame. */
  dropConnections(path?: DeepgramPath): void {
    for (const session of this.sessions) if (!path || session.path === path) session.ws.terminate();
  }

  /** Closes every open connection (on the path) with this code and reason, as Deepgram's errors do. */
  closeConnections(code: number, reason: string, path?: DeepgramPath): void {
    for (const session of this.sessions) if (!path || session.path === path) session.ws.close(code, reason);
  }

  /** Sends a raw text frame (malformed JSON, unknown types) to every open connection (on the path). */
  sendRaw(text: string, path?: DeepgramPath): void {
    for (const session of this.sessions) if (!path || session.path === path) session.ws.send(text);
  }

  // ---- VendorEmulator ----

  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): boolean {
    const url = new URL(req.url ?? '/', 'http://emulator');
    const path: DeepgramPath | undefined =
      url.pathname === '/v1/listen' ? 'listen' : url.pathname === '/v1/speak' ? 'speak' : undefined;
    if (!path) return false;

    const requestId = randomUUID();
    const credentials = readCredentials(req);
    const record = this.recordConnection(path, url.searchParams, credentials?.scheme, requestId);

    const rejection = this.takeFault(['reject', 'hang'], path);
    if (rejection?.kind === 'reject') {
      const status = rejection.status ?? 500;
      this.reject(socket, record, status, rejection.message ?? STATUS_CODES[status] ?? 'Error');
      return true;
    }
    const expected = this.resolved.options.apiKey;
    if (!credentials || credentials.key.length === 0 || (expected !== undefined && credentials.key !== expected)) {
      this.reject(socket, record, 401, 'Invalid credentials.');
      return true;
    }
    const problem = path === 'listen' ? checkListenQuery(url.searchParams) : checkSpeakQuery(url.searchParams);
    if (problem) {
      this.reject(socket, record, 400, problem);
      return true;
    }
    if (rejection?.kind === 'hang') {
      record.hung = true;
      this.stats.hungHandshakes += 1;
      this.hungSockets.add(socket);
      socket.once('close', () => this.hungSockets.delete(socket));
      socket.on('error', () => undefined);
      return true;
    }

    const stalled = this.takeFault(['stall'], path) !== undefined;
    const drop = this.takeFault(['drop'], path);
    this.requestIds.set(req, requestId);
    const upgrade = () =>
      this.wss.handleUpgrade(req, socket, head, (ws) => {
        const session: Session =
          path === 'listen'
            ? new ListenSession(ws, record, this.resolved, url.searchParams)
            : new SpeakSession(ws, record, this.resolved, url.searchParams);
        session.stalled = stalled;
        this.onConnection(session, drop?.afterMs);
      });
    const delayMs = this.takeFault(['delay'], path)?.afterMs;
    if (delayMs === undefined) upgrade();
    else this.upgradeLater(socket, record, delayMs, upgrade);
    return true;
  }

  close(): void {
    clearInterval(this.sweepTimer);
    this.sweepTimer = undefined;
    for (const session of this.sessions) {
      session.dispose();
      session.ws.terminate();
    }
    this.sessions.clear();
    this.listenSessions.clear();
    for (const socket of this.hungSockets) socket.destroy();
    this.hungSockets.clear();
    for (const [socket, timer] of this.delayedUpgrades) {
      clearTimeout(timer);
      socket.destroy();
    }
    this.delayedUpgrades.clear();
  }

  // ---- internals ----

  private upgradeLater(socket: Duplex, record: RecordedDeepgramConnection, delayMs: number, upgrade: () => void): void {
    record.delayedMs = delayMs;
    socket.on('error', () => undefined);
    const timer = setTimeout(() => {
      this.delayedUpgrades.delete(socket);
      // The client gave up (its handshake timeout) while it waited.
      if (!socket.destroyed) upgrade();
    }, delayMs);
    this.delayedUpgrades.set(socket, timer);
  }

  private onConnection(session: Session, dropAfterMs: number | undefined): void {
    const { ws, record } = session;
    this.sessions.add(session);
    if (session instanceof ListenSession) {
      this.listenSessions.add(session);
      this.startSweep();
    }
    this.stats.connections += 1;
    this.stats.activeConnections += 1;
    let dropTimer: NodeJS.Timeout | undefined;
    if (dropAfterMs !== undefined) {
      dropTimer = setTimeout(() => ws.terminate(), dropAfterMs);
      dropTimer.unref();
    }
    ws.on('message', (data: RawData, isBinary: boolean) => session.onMessage(toBuffer(data), isBinary));
    ws.on('error', () => undefined);
    ws.on('close', (code: number, reason: Buffer) => {
      clearTimeout(dropTimer);
      record.closeCode = code;
      record.closeReason = reason.toString('utf8');
      session.dispose();
      if (this.sessions.delete(session)) this.stats.activeConnections -= 1;
      if (session instanceof ListenSession) this.listenSessions.delete(session);
      if (this.listenSessions.size === 0) {
        clearInterval(this.sweepTimer);
        this.sweepTimer = undefined;
      }
    });
    if (session instanceof SpeakSession) session.start();
  }

  /** One timer for all listen sockets: closes those idle for idleTimeoutMs (NET-0001). */
  private startSweep(): void {
    if (this.sweepTimer) return;
    const idleMs = this.resolved.options.idleTimeoutMs;
    const everyMs = Math.min(1000, Math.max(10, Math.floor(idleMs / 4)));
    this.sweepTimer = setInterval(() => {
      const nowMs = performance.now();
      for (const session of this.listenSessions) {
        if (session.checkIdle(nowMs, idleMs)) this.stats.idleTimeouts += 1;
      }
    }, everyMs);
    this.sweepTimer.unref();
  }

  private recordConnection(
    path: DeepgramPath,
    params: URLSearchParams,
    auth: RecordedDeepgramConnection['auth'],
    requestId: string,
  ): RecordedDeepgramConnection {
    const query: Record<string, string | string[]> = {};
    for (const key of new Set(params.keys())) {
      const values = params.getAll(key);
      query[key] = values.length === 1 ? values[0]! : values;
    }
    const record: RecordedDeepgramConnection = {
      id: this.nextId++,
      path,
      query,
      auth,
      requestId,
      messages: [],
      audioBytes: 0,
      audioFrames: 0,
      keepAlives: 0,
      finalizes: 0,
      audioBytesAtFinalize: [],
      closeStreams: 0,
      results: 0,
      finals: [],
      texts: [],
      flushes: 0,
      clears: 0,
      closes: 0,
    };
    this.log.push(record);
    if (this.log.length > this.resolved.options.maxRecorded)
      this.log.splice(0, this.log.length - this.resolved.options.maxRecorded);
    return record;
  }

  private reject(socket: Duplex, record: RecordedDeepgramConnection, status: number, message: string): void {
    record.rejectedStatus = status;
    this.stats.rejectedHandshakes += 1;
    const errCode = ERROR_CODES[status] ?? (status >= 500 ? 'INTERNAL_SERVER_ERROR' : 'Bad Request');
    const body = JSON.stringify({ err_code: errCode, err_msg: message, request_id: record.requestId });
    const headerText = message.replace(/[\r\n]+/g, ' ');
    socket.on('error', () => undefined);
    socket.end(
      `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? 'Error'}\r\n` +
        'Content-Type: application/json\r\n' +
        `Content-Length: ${Buffer.byteLength(body)}\r\n` +
        `dg-request-id: ${record.requestId}\r\n` +
        `dg-error: ${headerText}\r\n` +
        'Connection: close\r\n\r\n' +
        body,
    );
  }

  private addFault(fault: Omit<Fault, 'path' | 'remaining'>, filter: FaultFilter): void {
    this.faults.push({ ...fault, path: filter.path, remaining: filter.count ?? 1 });
  }

  private takeFault(kinds: FaultKind[], path: DeepgramPath): Fault | undefined {
    const fault = this.faults.find((f) => kinds.includes(f.kind) && (!f.path || f.path === path));
    if (!fault) return undefined;
    fault.remaining -= 1;
    if (fault.remaining <= 0) this.faults = this.faults.filter((f) => f !== fault);
    return fault;
  }
}

// ---------------------------------------------------------------------------------------------
// /v1/listen
// ---------------------------------------------------------------------------------------------

interface ListenParams {
  model: string;
  language: string;
  encoding: 'mulaw' | 'alaw' | 'linear16';
  sampleRateHz: number;
  interimResults: boolean;
  endpointingMs: number | false;
  utteranceEndMs: number | undefined;
  vadEvents: boolean;
  /** smart_format or punctuate: transcripts keep their capitals and punctuation. */
  formatted: boolean;
}

interface Utterance {
  text: string;
  /** Audio ms of the connection where the speech began. */
  startMs: number;
  lastInterimMs: number;
}

const MULAW_TABLE = decodeMulaw(Uint8Array.from({ length: 256 }, (_, i) => i));
const ALAW_TABLE = alawmulaw.alaw.decode(Uint8Array.from({ length: 256 }, (_, i) => i));

class ListenSession implements Session {
  readonly path = 'listen' as const;
  stalled = false;
  private readonly params: ListenParams;
  private readonly thresholdSquared: number;
  private readonly windowSamples: number;
  private readonly modelUuid = randomUUID();
  private readonly createdIso = new Date().toISOString();
  // Energy of the 20 ms window being filled.
  private sumSquares = 0;
  private samplesInWindow = 0;
  /** linear16: the odd byte of a sample split across frames. */
  private carryByte = -1;
  private windows = 0;
  // Speech state, in audio ms of this connection.
  private inSpeech = false;
  private utterance: Utterance | undefined;
  private silenceStartMs: number | undefined;
  private silenceStartWallMs = 0;
  private lastWordEndMs: number | undefined;
  private lastFinalEndMs = 0;
  private transcriptIndex = 0;
  private finalTimer: NodeJS.Timeout | undefined;
  private closing = false;
  // Idle tracking: set per frame, read by the emulator's sweep.
  private active = true;
  private lastActiveMs = performance.now();

  constructor(
    readonly ws: WebSocket,
    readonly record: RecordedDeepgramConnection,
    private readonly env: Resolved,
    query: URLSearchParams,
  ) {
    this.params = listenParams(query);
    const threshold = env.options.speechRmsThreshold;
    this.thresholdSquared = threshold * threshold;
    this.windowSamples = Math.max(1, Math.round((this.params.sampleRateHz * WINDOW_MS) / 1000));
  }

  private get audioMs(): number {
    return this.windows * WINDOW_MS;
  }

  onMessage(data: Buffer, isBinary: boolean): void {
    this.active = true;
    if (isBinary) this.onAudio(data);
    else this.onControl(data.toString('utf8'));
  }

  /** Called by the sweep; true when it closed the socket for idleness. */
  checkIdle(nowMs: number, idleMs: number): boolean {
    if (this.active) {
      this.active = false;
      this.lastActiveMs = nowMs;
      return false;
    }
    if (this.closing || nowMs - this.lastActiveMs < idleMs) return false;
    this.closing = true;
    this.dispose();
    this.ws.close(1011, CLOSE_REASONS.clientIdle);
    return true;
  }

  dispose(): void {
    clearTimeout(this.finalTimer);
    this.finalTimer = undefined;
  }

  private onAudio(data: Buffer): void {
    if (this.closing) return;
    // An empty binary frame is Deepgram's old way of saying CloseStream.
    if (data.length === 0) {
      this.closeStream();
      return;
    }
    this.record.audioBytes += data.length;
    this.record.audioFrames += 1;
    this.env.stats.audioBytesReceived += data.length;
    if (this.stalled) return;
    if (this.params.encoding === 'linear16') this.sumLinear16(data);
    else this.sumCompanded(data, this.params.encoding === 'mulaw' ? MULAW_TABLE : ALAW_TABLE);
  }

  private sumCompanded(data: Buffer, table: Int16Array): void {
    const windowSamples = this.windowSamples;
    for (let i = 0; i < data.length; i++) {
      const sample = table[data[i]!]!;
      this.sumSquares += sample * sample;
      if (++this.samplesInWindow === windowSamples) this.endWindow();
    }
  }

  private sumLinear16(data: Buffer): void {
    const windowSamples = this.windowSamples;
    let i = 0;
    if (this.carryByte >= 0) {
      this.addLinear16(this.carryByte | (data[0]! << 8), windowSamples);
      this.carryByte = -1;
      i = 1;
    }
    for (; i + 1 < data.length; i += 2) this.addLinear16(data[i]! | (data[i + 1]! << 8), windowSamples);
    if (i < data.length) this.carryByte = data[i]!;
  }

  private addLinear16(unsigned: number, windowSamples: number): void {
    const sample = (unsigned << 16) >> 16;
    this.sumSquares += sample * sample;
    if (++this.samplesInWindow === windowSamples) this.endWindow();
  }

  private endWindow(): void {
    const voiced = this.sumSquares / this.samplesInWindow >= this.thresholdSquared;
    this.sumSquares = 0;
    this.samplesInWindow = 0;
    this.windows += 1;
    if (voiced) this.onVoiced();
    else this.onSilent();
  }

  private onVoiced(): void {
    const audioMs = this.audioMs;
    this.lastWordEndMs = audioMs;
    if (!this.inSpeech) {
      this.inSpeech = true;
      this.silenceStartMs = undefined;
      // A final already due (endpoint reached) still goes out; speech after it is a new utterance.
      if (!this.utterance) this.beginUtterance(audioMs - WINDOW_MS);
    }
    const utterance = this.utterance;
    if (
      utterance &&
      this.params.interimResults &&
      audioMs - utterance.lastInterimMs >= this.env.options.interimIntervalMs
    ) {
      utterance.lastInterimMs = audioMs;
      this.sendResults(utterance, false, false, false);
    }
  }

  private onSilent(): void {
    const audioMs = this.audioMs;
    if (this.inSpeech) {
      this.inSpeech = false;
      this.silenceStartMs = audioMs - WINDOW_MS;
      this.silenceStartWallMs = performance.now();
    }
    const { endpointingMs, utteranceEndMs, interimResults } = this.params;
    if (this.utterance && !this.finalTimer && this.silenceStartMs !== undefined) {
      const neededMs = endpointingMs === false ? NO_ENDPOINTING_FINAL_MS : endpointingMs;
      if (audioMs - this.silenceStartMs >= neededMs) {
        const speechFinal = endpointingMs !== false;
        const waitMs = Math.max(0, this.env.latencies.sttFinalDelayMs - (performance.now() - this.silenceStartWallMs));
        if (waitMs === 0) this.sendFinal(speechFinal, false);
        else
          this.finalTimer = setTimeout(() => {
            this.finalTimer = undefined;
            this.sendFinal(speechFinal, false);
          }, waitMs);
      }
    }
    if (
      utteranceEndMs !== undefined &&
      interimResults &&
      this.lastWordEndMs !== undefined &&
      audioMs - this.lastWordEndMs >= utteranceEndMs
    ) {
      if (this.utterance) this.sendFinal(endpointingMs !== false, false);
      this.send({ type: 'UtteranceEnd', channel: [0, 1], last_word_end: this.lastWordEndMs / 1000 });
      this.lastWordEndMs = undefined;
    }
  }

  private beginUtterance(startMs: number): void {
    const transcripts = this.env.options.transcripts;
    const text = transcripts[this.transcriptIndex % transcripts.length]!;
    this.transcriptIndex += 1;
    this.utterance = { text: this.params.formatted ? text : unformatted(text), startMs, lastInterimMs: startMs };
    if (this.params.vadEvents) this.send({ type: 'SpeechStarted', channel: [0, 1], timestamp: startMs / 1000 });
  }

  private onControl(text: string): void {
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      this.remember({ unparsable: text.length });
      return;
    }
    this.remember(json);
    // Deepgram's handling of unknown control messages is not documented: they are ignored here.
    const parsed = listenClientMessage.safeParse(json);
    if (!parsed.success || this.closing) return;
    switch (parsed.data.type) {
      case 'KeepAlive':
        this.record.keepAlives += 1;
        this.env.stats.keepAlives += 1;
        return;
      case 'Finalize':
        this.record.finalizes += 1;
        this.env.stats.finalizes += 1;
        if (this.record.audioBytesAtFinalize.length < MAX_RECORDED_MESSAGES)
          this.record.audioBytesAtFinalize.push(this.record.audioBytes);
        // Deepgram documents that a `from_finalize` result MAY come, typically when a noticeable
        // amount of audio is buffered: with every word already finalised (its endpointing fired
        // in the caller's pause) there is nothing to answer with, and nothing comes.
        if (!this.stalled && this.utterance) this.sendFinal(!this.inSpeech, true);
        return;
      case 'CloseStream':
        this.closeStream();
        return;
    }
  }

  private closeStream(): void {
    if (this.closing) return;
    this.closing = true;
    this.record.closeStreams += 1;
    this.env.stats.closeStreams += 1;
    if (this.stalled) return;
    if (this.utterance) this.sendFinal(!this.inSpeech, false);
    this.dispose();
    this.send({
      type: 'Metadata',
      transaction_key: 'deprecated',
      request_id: this.record.requestId,
      // Not a digest of the audio (that would cost a hash per frame); shaped like one.
      sha256: createHash('sha256').update(this.record.requestId).digest('hex'),
      created: this.createdIso,
      duration: this.audioMs / 1000,
      channels: 1,
      models: [this.modelUuid],
      model_info: { [this.modelUuid]: { name: this.params.model, version: 'emulated', arch: this.params.model } },
    });
    this.ws.close(1000);
  }

  /** The final result of the current utterance (empty when there is none), then a new one if speech goes on. */
  private sendFinal(speechFinal: boolean, fromFinalize: boolean): void {
    clearTimeout(this.finalTimer);
    this.finalTimer = undefined;
    const utterance = this.utterance;
    this.utterance = undefined;
    this.sendResults(utterance, true, speechFinal, fromFinalize);
    this.lastFinalEndMs = this.audioMs;
    if (this.inSpeech && !this.closing) this.beginUtterance(this.audioMs);
  }

  private sendResults(
    utterance: Utterance | undefined,
    isFinal: boolean,
    speechFinal: boolean,
    fromFinalize: boolean,
  ): void {
    const audioMs = this.audioMs;
    let words: string[] = [];
    if (utterance) {
      words = utterance.text.split(/\s+/).filter((word) => word.length > 0);
      if (!isFinal) words = words.slice(0, Math.max(1, Math.ceil((audioMs - utterance.startMs) / WORD_MS)));
    }
    const spanStartMs = utterance?.startMs ?? audioMs;
    const spanEndMs = Math.max(spanStartMs, Math.min(this.lastWordEndMs ?? audioMs, audioMs));
    const perWordMs = words.length > 0 ? (spanEndMs - spanStartMs) / words.length : 0;
    const message: ResultsMessage = {
      type: 'Results',
      channel_index: [0, 1],
      start: this.lastFinalEndMs / 1000,
      duration: (audioMs - this.lastFinalEndMs) / 1000,
      is_final: isFinal,
      speech_final: speechFinal,
      from_finalize: fromFinalize,
      channel: {
        alternatives: [
          {
            transcript: words.join(' '),
            confidence: words.length > 0 ? 0.99 : 0,
            ...(this.params.language === 'multi' ? { languages: ['en'] } : {}),
            words: words.map((word, i) => ({
              word: unformatted(word),
              start: (spanStartMs + i * perWordMs) / 1000,
              end: (spanStartMs + (i + 1) * perWordMs) / 1000,
              confidence: 0.99,
              ...(this.params.formatted ? { punctuated_word: word } : {}),
            })),
          },
        ],
      },
      metadata: {
        request_id: this.record.requestId,
        model_uuid: this.modelUuid,
        model_info: { name: this.params.model, version: 'emulated', arch: this.params.model },
      },
    };
    this.record.results += 1;
    this.env.stats.results += 1;
    if (isFinal && this.record.finals.length < MAX_RECORDED_MESSAGES) {
      this.record.finals.push({ transcript: message.channel.alternatives[0]!.transcript, fromFinalize, speechFinal });
    }
    this.send(message);
  }

  private send(message: object): void {
    if (this.ws.readyState === this.ws.OPEN) this.ws.send(JSON.stringify(message));
  }

  private remember(message: unknown): void {
    if (this.record.messages.length < MAX_RECORDED_MESSAGES) this.record.messages.push(message);
  }
}

function listenParams(query: URLSearchParams): ListenParams {
  const endpointing = query.get('endpointing');
  const utteranceEnd = query.get('utterance_end_ms');
  return {
    model: query.get('model') ?? DEFAULT_LISTEN_MODEL,
    language: query.get('language') ?? 'en',
    encoding: (query.get('encoding') ?? 'linear16') as ListenParams['encoding'],
    sampleRateHz: Number(query.get('sample_rate') ?? 16000),
    interimResults: query.get('interim_results') === 'true',
    endpointingMs:
      endpointing === 'false' ? false : endpointing === null ? DEFAULT_ENDPOINTING_MS : Number(endpointing),
    utteranceEndMs: utteranceEnd === null ? undefined : Number(utteranceEnd),
    vadEvents: query.get('vad_events') === 'true',
    formatted: query.get('smart_format') === 'true' || query.get('punctuate') === 'true',
  };
}

/** What Deepgram would refuse (HTTP 400), or what the emulator cannot emulate; undefined when fine. */
function checkListenQuery(query: URLSearchParams): string | undefined {
  const encoding = query.get('encoding');
  if (encoding === null) return 'the emulator needs raw audio: set encoding (mulaw, alaw or linear16) and sample_rate';
  if (!LISTEN_ENCODINGS.includes(encoding)) return `Invalid encoding "${encoding}"`;
  if (!EMULATED_LISTEN_ENCODINGS.has(encoding))
    return `encoding "${encoding}" is not emulated (mulaw, alaw and linear16 are)`;
  const sampleRate = query.get('sample_rate');
  if (sampleRate === null) return 'sample_rate is required for raw audio';
  if (!/^\d+$/.test(sampleRate) || Number(sampleRate) < 1000 || Number(sampleRate) > 192_000)
    return `Invalid sample_rate "${sampleRate}"`;
  const channels = query.get('channels');
  if (channels !== null && channels !== '1') return `channels "${channels}" is not emulated (only 1 is)`;
  if (query.get('multichannel') === 'true') return 'multichannel is not emulated';
  const endpointing = query.get('endpointing');
  if (endpointing !== null && endpointing !== 'false' && endpointing !== 'true' && !/^\d+$/.test(endpointing)) {
    return `Invalid endpointing "${endpointing}"`;
  }
  const utteranceEnd = query.get('utterance_end_ms');
  if (utteranceEnd !== null && !/^\d+$/.test(utteranceEnd)) return `Invalid utterance_end_ms "${utteranceEnd}"`;
  for (const flag of ['interim_results', 'vad_events', 'smart_format', 'punctuate']) {
    const value = query.get(flag);
    if (value !== null && value !== 'true' && value !== 'false') return `Invalid ${flag} "${value}"`;
  }
  return undefined;
}

/** Transcripts as Deepgram gives them without smart_format/punctuate: lower case, no punctuation. */
function unformatted(text: string): string {
  return text.toLowerCase().replace(/[.,!?;:"]/g, '');
}

// ---------------------------------------------------------------------------------------------
// /v1/speak
// ---------------------------------------------------------------------------------------------

interface SpeakJob {
  text: string;
  sequenceId: number;
  flushedAtMs: number;
}

interface ActiveJob {
  job: SpeakJob;
  remainingBytes: number;
  timer: NodeJS.Timeout | undefined;
}

class SpeakSession implements Session {
  readonly path = 'speak' as const;
  stalled = false;
  private readonly model: string;
  private readonly encoding: AuraEncoding;
  private readonly sampleRateHz: number;
  private readonly bytesPerSample: number;
  private readonly speed: number;
  private readonly tone: Buffer;
  private readonly chunkBytes: number;
  private readonly modelUuid = randomUUID();
  private textBuffer = '';
  private readonly jobs: SpeakJob[] = [];
  private active: ActiveJob | undefined;
  /** Shared by Flushed and Cleared, in the order the requests came. */
  private nextSequenceId = 0;
  /** Where in the one-second tone the next chunk starts, in samples. */
  private tonePosition = 0;
  private readonly flushTimesMs: number[] = [];
  private closed = false;

  constructor(
    readonly ws: WebSocket,
    readonly record: RecordedDeepgramConnection,
    private readonly env: Resolved,
    query: URLSearchParams,
  ) {
    this.model = query.get('model') ?? DEFAULT_SPEAK_MODEL;
    this.encoding = (query.get('encoding') ?? AURA_DEFAULT_ENCODING) as AuraEncoding;
    this.sampleRateHz = Number(query.get('sample_rate') ?? AURA_DEFAULT_SAMPLE_RATE_HZ);
    this.bytesPerSample = this.encoding === 'linear16' ? 2 : 1;
    const speed = Number(query.get('speed') ?? 1);
    this.speed = Number.isFinite(speed) && speed > 0 ? speed : 1;
    this.tone = toneFor(this.encoding, this.sampleRateHz);
    this.chunkBytes =
      Math.max(1, Math.round((this.sampleRateHz * env.options.ttsChunkMs) / 1000)) * this.bytesPerSample;
  }

  start(): void {
    if (this.stalled) return;
    this.send({
      type: 'Metadata',
      request_id: this.record.requestId,
      model_name: this.model,
      model_version: 'emulated',
      model_uuid: this.modelUuid,
      additional_model_uuids: [],
    });
  }

  onMessage(data: Buffer, isBinary: boolean): void {
    if (this.closed) return;
    if (isBinary) {
      this.remember({ binary: data.length });
      if (!this.stalled) this.warn('The speak socket takes JSON text messages only.', 'INVALID_MESSAGE');
      return;
    }
    const text = data.toString('utf8');
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      this.remember({ unparsable: text.length });
      if (!this.stalled) this.warn('Could not parse the message as JSON.', 'INVALID_MESSAGE');
      return;
    }
    this.remember(json);
    const parsed = speakClientMessage.safeParse(json);
    if (!parsed.success) {
      if (!this.stalled) this.warn('Unknown or malformed message.', 'INVALID_MESSAGE');
      return;
    }
    const message = parsed.data;
    switch (message.type) {
      case 'Speak':
        if (this.record.texts.length < MAX_RECORDED_MESSAGES) this.record.texts.push(message.text);
        this.textBuffer += message.text;
        return;
      case 'Flush':
        this.record.flushes += 1;
        this.env.stats.flushes += 1;
        if (!this.stalled) this.flush();
        return;
      case 'Clear':
        this.record.clears += 1;
        this.env.stats.clears += 1;
        if (!this.stalled) this.clear();
        return;
      case 'Close':
        this.record.closes += 1;
        this.env.stats.closes += 1;
        this.closed = true;
        this.dispose();
        this.ws.close(1000);
        return;
    }
  }

  dispose(): void {
    if (this.active) clearTimeout(this.active.timer);
    this.active = undefined;
    this.jobs.length = 0;
  }

  private flush(): void {
    const nowMs = performance.now();
    const { count, windowMs } = AURA_FLUSH_LIMIT;
    while (this.flushTimesMs.length > 0 && nowMs - this.flushTimesMs[0]! >= windowMs) this.flushTimesMs.shift();
    if (this.flushTimesMs.length >= count) {
      this.warn(
        `Flush limit exceeded: at most ${count} flushes per ${windowMs / 1000} seconds.`,
        'FLUSH_LIMIT_EXCEEDED',
      );
      return;
    }
    this.flushTimesMs.push(nowMs);
    this.jobs.push({ text: this.textBuffer, sequenceId: this.nextSequenceId++, flushedAtMs: nowMs });
    this.textBuffer = '';
    if (!this.active) this.startNextJob();
  }

  private clear(): void {
    this.textBuffer = '';
    this.jobs.length = 0;
    const active = this.active;
    if (active) {
      clearTimeout(active.timer);
      // Audio already in flight when the Clear arrives can still reach the client.
      for (let i = 0; i < this.env.options.staleChunksAfterClear && active.remainingBytes > 0; i++)
        this.sendChunk(active);
      this.active = undefined;
    }
    this.send({ type: 'Cleared', sequence_id: this.nextSequenceId++ });
  }

  private startNextJob(): void {
    const job = this.jobs.shift();
    if (!job) return;
    const samples = Math.round(
      (job.text.length * this.env.options.ttsMsPerChar * this.sampleRateHz) / 1000 / this.speed,
    );
    const active: ActiveJob = { job, remainingBytes: samples * this.bytesPerSample, timer: undefined };
    if (active.remainingBytes === 0) {
      this.send({ type: 'Flushed', sequence_id: job.sequenceId });
      this.startNextJob();
      return;
    }
    this.active = active;
    // A job that waited behind another has had its first-byte latency already.
    const waitMs = Math.max(0, this.env.latencies.ttsFirstByteMs - (performance.now() - job.flushedAtMs));
    active.timer = setTimeout(() => this.onChunkDue(active), waitMs);
  }

  private onChunkDue(active: ActiveJob): void {
    if (this.active !== active || this.closed) return;
    this.sendChunk(active);
    if (active.remainingBytes > 0) {
      const chunkMs = (this.chunkBytes / this.bytesPerSample / this.sampleRateHz) * 1000;
      active.timer = setTimeout(() => this.onChunkDue(active), chunkMs / this.env.latencies.ttsRealTimeFactor);
      return;
    }
    this.active = undefined;
    this.send({ type: 'Flushed', sequence_id: active.job.sequenceId });
    this.startNextJob();
  }

  private sendChunk(active: ActiveJob): void {
    const bytes = Math.min(this.chunkBytes, active.remainingBytes);
    const start = this.tonePosition * this.bytesPerSample;
    this.ws.send(this.tone.subarray(start, start + bytes));
    this.tonePosition = (this.tonePosition + bytes / this.bytesPerSample) % this.sampleRateHz;
    active.remainingBytes -= bytes;
    this.record.audioBytes += bytes;
    this.record.audioFrames += 1;
    this.env.stats.audioBytesSent += bytes;
  }

  private warn(description: string, code: string): void {
    this.send({ type: 'Warning', description, code });
  }

  private send(message: object): void {
    if (this.ws.readyState === this.ws.OPEN) this.ws.send(JSON.stringify(message));
  }

  private remember(message: unknown): void {
    if (this.record.messages.length < MAX_RECORDED_MESSAGES) this.record.messages.push(message);
  }
}

function checkSpeakQuery(query: URLSearchParams): string | undefined {
  const encoding = query.get('encoding');
  if (encoding !== null && !(AURA_ENCODINGS as readonly string[]).includes(encoding)) {
    return `Invalid encoding "${encoding}": the websocket accepts ${AURA_ENCODINGS.join(', ')}`;
  }
  const sampleRate = query.get('sample_rate');
  if (sampleRate !== null && !(AURA_SAMPLE_RATES_HZ as readonly number[]).includes(Number(sampleRate))) {
    return `Invalid sample_rate "${sampleRate}": use one of ${AURA_SAMPLE_RATES_HZ.join(', ')}`;
  }
  const model = query.get('model');
  if (model !== null && model.length === 0) return 'Invalid model ""';
  const speed = query.get('speed');
  if (speed !== null && !(Number(speed) > 0)) return `Invalid speed "${speed}"`;
  return undefined;
}

const tones = new Map<string, Buffer>();

/**
 * Two seconds of a 440 Hz tone in the encoding and rate: one second holds a whole number of
 * periods, so any chunk up to a second long starting within the first second is seamless.
 */
function toneFor(encoding: AuraEncoding, sampleRateHz: number): Buffer {
  const key = `${encoding}/${sampleRateHz}`;
  let tone = tones.get(key);
  if (!tone) {
    const pcm = new Int16Array(sampleRateHz * 2);
    for (let i = 0; i < pcm.length; i++)
      pcm[i] = Math.round(8000 * Math.sin((2 * Math.PI * TONE_HZ * i) / sampleRateHz));
    if (encoding === 'linear16') tone = Buffer.from(pcm.buffer, pcm.byteOffset, pcm.byteLength);
    else if (encoding === 'mulaw') tone = Buffer.from(encodeMulaw(pcm));
    else tone = Buffer.from(alawmulaw.alaw.encode(pcm));
    tones.set(key, tone);
  }
  return tone;
}

// ---------------------------------------------------------------------------------------------
// Handshake helpers
// ---------------------------------------------------------------------------------------------

function readCredentials(
  req: IncomingMessage,
): { scheme: NonNullable<RecordedDeepgramConnection['auth']>; key: string } | undefined {
  const header = req.headers.authorization;
  if (header !== undefined) {
    const match = /^(token|bearer)\s+(\S+)\s*$/i.exec(header);
    if (!match) return undefined;
    return { scheme: match[1]!.toLowerCase() as 'token' | 'bearer', key: match[2]! };
  }
  const protocols = (req.headers['sec-websocket-protocol'] ?? '')
    .split(',')
    .map((protocol) => protocol.trim())
    .filter((protocol) => protocol.length > 0);
  const scheme = protocols[0]?.toLowerCase();
  if ((scheme === 'token' || scheme === 'bearer') && protocols[1])
    return { scheme: `subprotocol-${scheme}`, key: protocols[1] };
  return undefined;
}

function toBuffer(data: RawData): Buffer {
  if (Buffer.isBuffer(data)) return data;
  if (Array.isArray(data)) return Buffer.concat(data);
  return Buffer.from(data);
}
