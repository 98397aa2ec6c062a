import { randomUUID } from 'node:crypto';
import { type IncomingMessage, STATUS_CODES, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { type RawData, WebSocketServer } from 'ws';
import {
  type DeepgramEmulatorOptions,
  type DeepgramEmulatorStats,
  type DeepgramPath,
  type RecordedDeepgramConnection,
  type Resolved,
  type Session,
  WINDOW_MS,
} from './deepgram-emulator-shared.js';
import { ListenSession, checkListenQuery } from './deepgram-listen-session.js';
import { serveSpeakRest } from './deepgram-speak-rest.js';
import { SpeakSession, checkSpeakQuery } from './deepgram-speak-session.js';
import { frameBytes } from './emulator-kit.js';
import { FaultPlan } from './fault-plan.js';
import { DEFAULT_EMULATOR_LATENCIES, type VendorEmulator } from './types.js';

export type {
  DeepgramEmulatorOptions,
  DeepgramEmulatorStats,
  DeepgramPath,
  RecordedDeepgramConnection,
  RecordedDeepgramFinal,
} from './deepgram-emulator-shared.js';

/**
 * Deepgram, emulated: live transcription on `/v1/listen` (docs/providers.md section 1) and Aura
 * text-to-speech on the `/v1/speak` websocket (section 6b) and over REST (`POST /v1/speak`,
 * section 6a, deepgram-speak-rest.ts), on one port.
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

const ERROR_CODES: Record<number, string> = {
  400: 'Bad Request',
  401: 'INVALID_AUTH',
  402: 'ASR_PAYMENT_REQUIRED',
  403: 'INSUFFICIENT_PERMISSIONS',
  404: 'NOT_FOUND',
  429: 'TOO_MANY_REQUESTS',
};

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
  /** Handshakes waiting out a `delay` fault, and their timers. */
  private readonly delayedUpgrades = new Map<Duplex, NodeJS.Timeout>();
  private readonly requestIds = new WeakMap<IncomingMessage, string>();
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

  /**
   * Faults to play on the next handshakes (fault-plan.ts), on one path with `{ path }` or on
   * several with `{ count }`: `reject` (this HTTP status with Deepgram's error body, `message` as
   * its err_msg), `hang` (never answered, so the client's handshake timeout fires), `delay`
   * (upgraded only `delayMs` after it arrived, as over a slow TLS handshake or from a far region;
   * a client that gives up meanwhile gets nothing), `stall` (upgraded, then never answers anything:
   * no results, no audio), `drop` (dropped without a close frame, as on a network failure,
   * `afterMs` after opening).
   */
  readonly faults = new FaultPlan<DeepgramPath>();

  // ---- what the vendor does to open connections (for tests) ----

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

  handleHttp(req: IncomingMessage, res: ServerResponse): boolean {
    if (new URL(req.url ?? '/', 'http://emulator').pathname !== '/v1/speak') return false;
    const credentials = readCredentials(req);
    serveSpeakRest(req, res, this.resolved, {
      key: credentials?.scheme === 'token' || credentials?.scheme === 'bearer' ? credentials.key : undefined,
      requestId: randomUUID(),
    });
    return true;
  }

  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): boolean {
    const url = new URL(req.url ?? '/', 'http://emulator');
    const path: DeepgramPath | undefined =
      url.pathname === '/v1/listen' ? 'listen' : url.pathname === '/v1/speak' ? 'speak' : undefined;
    if (!path) return false;

    const requestId = randomUUID();
    const credentials = readCredentials(req);
    const record = this.recordConnection(path, url.searchParams, credentials?.scheme, requestId);

    const rejection = this.faults.take(['reject', 'hang'], path);
    if (rejection?.kind === 'reject') {
      const { status } = rejection;
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

    const stalled = this.faults.take(['stall'], path) !== undefined;
    const drop = this.faults.take(['drop'], path);
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
    const delayMs = this.faults.take(['delay'], path)?.delayMs;
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
    ws.on('message', (data: RawData, isBinary: boolean) => session.onMessage(frameBytes(data), isBinary));
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
}

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
