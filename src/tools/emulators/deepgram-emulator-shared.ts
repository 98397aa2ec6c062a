import type { WebSocket } from 'ws';
import type { EmulatorLatencies } from './types.js';

/** What the Deepgram emulator's two endpoints share: options, records, stats, and a session's shape. */

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
  /** The handshake was left unanswered (a `hang` fault). */
  hung?: boolean;
  /** The upgrade was held back this long (a `delay` fault), ms. */
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

export const MAX_RECORDED_MESSAGES = 1000;
/** The listen endpoint judges speech per window of this much audio; the speak endpoint's smallest chunk. */
export const WINDOW_MS = 20;

export interface Resolved {
  options: Required<Omit<DeepgramEmulatorOptions, 'latencies' | 'apiKey'>> & { apiKey: string | undefined };
  latencies: EmulatorLatencies;
  stats: DeepgramEmulatorStats;
}

/** One accepted connection on `/v1/listen` or `/v1/speak`. */
export interface Session {
  readonly ws: WebSocket;
  readonly record: RecordedDeepgramConnection;
  path: DeepgramPath;
  /** Accepts frames but never answers (a `stall` fault). */
  stalled: boolean;
  onMessage(data: Buffer, isBinary: boolean): void;
  dispose(): void;
}
