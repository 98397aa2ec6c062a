import { STATUS_CODES, type IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import alawmulaw from 'alawmulaw';
import { type RawData, type WebSocket, WebSocketServer } from 'ws';
import { encodeMulaw } from '../../audio/mulaw.js';
import { CLOSE } from '../../shared/close-codes.js';

/**
 * What the vendor emulators share: tone audio in any wire format, paced like speech, and the
 * small plumbing of a websocket emulator.
 */

/** Emulated speech lasts this long per character of text. */
export const SPEECH_MS_PER_CHAR = 60;
const TONE_HZ = 440;
/** About -10 dBFS: clearly audible, never clipping. */
const TONE_AMPLITUDE = 0.3;

export type ToneEncoding = 'mulaw' | 'alaw' | 's16le' | 'f32le';

export interface ToneFormat {
  encoding: ToneEncoding;
  sampleRateHz: number;
}

export interface TonePace {
  /** Delay before a stream's first chunk. */
  firstByteMs: number;
  /** Audio seconds produced per wall-clock second; 0 or Infinity sends as fast as possible. */
  realTimeFactor: number;
  /** Audio per chunk, ms. */
  chunkMs: number;
}

/** How long the emulated speech of a text lasts (leading and trailing whitespace excluded). */
export function speechDurationMs(text: string): number {
  return text.trim().length * SPEECH_MS_PER_CHAR;
}

export function bytesPerSample(encoding: ToneEncoding): number {
  return encoding === 's16le' ? 2 : encoding === 'f32le' ? 4 : 1;
}

const toneCache = new Map<string, Buffer>();

/** One second of the tone: a whole number of cycles, so it loops without a click. Built once per format. */
function toneSecond(format: ToneFormat): Buffer {
  const key = `${format.encoding}/${format.sampleRateHz}`;
  let second = toneCache.get(key);
  if (!second) {
    const rate = format.sampleRateHz;
    const pcm = new Int16Array(rate);
    for (let i = 0; i < rate; i++)
      pcm[i] = Math.round(Math.sin((2 * Math.PI * TONE_HZ * i) / rate) * TONE_AMPLITUDE * 32767);
    switch (format.encoding) {
      case 'mulaw':
        second = Buffer.from(encodeMulaw(pcm));
        break;
      case 'alaw':
        second = Buffer.from(alawmulaw.alaw.encode(pcm));
        break;
      case 's16le':
        second = Buffer.from(pcm.buffer);
        break;
      case 'f32le': {
        second = Buffer.alloc(rate * 4);
        for (let i = 0; i < rate; i++) second.writeFloatLE(pcm[i]! / 32768, i * 4);
        break;
      }
    }
    toneCache.set(key, second);
  }
  return second;
}

/** `sampleCount` samples of the tone starting at sample `offset` of an endless stream. */
export function toneAudio(format: ToneFormat, offset: number, sampleCount: number): Buffer {
  const second = toneSecond(format);
  const width = bytesPerSample(format.encoding);
  const out = Buffer.allocUnsafe(sampleCount * width);
  let written = 0;
  let at = (offset % format.sampleRateHz) * width;
  while (written < out.length) {
    const n = Math.min(out.length - written, second.length - at);
    second.copy(out, written, at, at + n);
    written += n;
    at = 0;
  }
  return out;
}

/**
 * Plays segments of tone one after another, as chunks paced like speech: the stream's first
 * chunk after firstByteMs, then one every chunkMs / realTimeFactor. `stop()` takes effect at once.
 */
export class ToneStream {
  private offsetSamples = 0;
  private timer: NodeJS.Timeout | undefined;
  private started = false;
  private stopped = false;

  constructor(
    readonly format: ToneFormat,
    private readonly pace: TonePace,
  ) {}

  /** Plays `durationMs` of tone; `onChunk` gets each chunk and its [start, end) in ms of the segment. */
  play(durationMs: number, onChunk: (audio: Buffer, startMs: number, endMs: number) => void, onEnd: () => void): void {
    if (this.stopped) return;
    const rate = this.format.sampleRateHz;
    const totalSamples = Math.round((durationMs * rate) / 1000);
    const chunkSamples = Math.max(1, Math.round((this.pace.chunkMs * rate) / 1000));
    const factor = this.pace.realTimeFactor;
    const intervalMs = factor > 0 && Number.isFinite(factor) ? this.pace.chunkMs / factor : 0;
    let sent = 0;
    const tick = () => {
      this.timer = undefined;
      const count = Math.min(chunkSamples, totalSamples - sent);
      if (count > 0) {
        const audio = toneAudio(this.format, this.offsetSamples, count);
        const startMs = (sent * 1000) / rate;
        sent += count;
        this.offsetSamples += count;
        onChunk(audio, startMs, (sent * 1000) / rate);
        if (this.stopped) return;
      }
      if (sent >= totalSamples) {
        onEnd();
        return;
      }
      this.timer = setTimeout(tick, intervalMs);
    };
    this.timer = setTimeout(tick, this.started ? intervalMs : this.pace.firstByteMs);
    this.started = true;
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
    this.timer = undefined;
  }
}

/** Answers an upgrade request with an HTTP error and a JSON body, as a vendor refusing the handshake. */
export function writeHttpError(socket: Duplex, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? 'Error'}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(text)}\r\nConnection: close\r\n\r\n${text}`,
  );
}

export function send(ws: WebSocket, message: object): void {
  if (ws.readyState === ws.OPEN) ws.send(JSON.stringify(message));
}

export function header(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  const first = Array.isArray(value) ? value[0] : value;
  return first && first.length > 0 ? first : undefined;
}

export function bearer(req: IncomingMessage): string | undefined {
  const match = /^Bearer\s+(.+)$/i.exec(header(req, 'authorization') ?? '');
  return match?.[1]?.trim() || undefined;
}

/** Request headers for a log; the named ones (keys) read [redacted]. */
export function recordedHeaders(req: IncomingMessage, secret: string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(req.headers)) {
    if (value === undefined) continue;
    out[name] = secret.includes(name) ? '[redacted]' : Array.isArray(value) ? value.join(', ') : value;
  }
  return out;
}

/** Path and query for a log, the named query parameters (keys) replaced by [redacted]. */
export function redactQuery(url: URL, names: string[]): string {
  const copy = new URL(url.href);
  for (const name of names) if (copy.searchParams.has(name)) copy.searchParams.set(name, '[redacted]');
  return copy.pathname + copy.search;
}

export function pushBounded<T>(list: T[], item: T, max: number): void {
  list.push(item);
  if (list.length > max) list.shift();
}

export function describeIssues(issues: ReadonlyArray<{ path: PropertyKey[]; message: string }>): string {
  return issues
    .slice(0, 5)
    .map((issue) => `${issue.path.map(String).join('.') || '(message)'}: ${issue.message}`)
    .join('; ');
}

/** A websocket frame's bytes as one Buffer (ws hands them as a Buffer, fragments or an ArrayBuffer). */
export function frameBytes(data: RawData): Buffer {
  if (Buffer.isBuffer(data)) return data;
  if (Array.isArray(data)) return Buffer.concat(data);
  return Buffer.from(data);
}

export function frameText(data: RawData): string {
  if (Buffer.isBuffer(data)) return data.toString('utf8');
  if (Array.isArray(data)) return Buffer.concat(data).toString('utf8');
  return Buffer.from(data).toString('utf8');
}

export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * The websocket sessions of a speech-to-speech emulator: upgrades a request into a session,
 * records the close code, and drops (vendor outage) or stops them all.
 */
export class EmulatorSessions<S extends { stop(): void }> {
  private readonly wss = new WebSocketServer({ noServer: true });
  private readonly sockets = new Set<WebSocket>();
  private readonly sessions = new Set<S>();

  accept(
    req: IncomingMessage,
    socket: Duplex,
    head: Buffer,
    record: { closeCode?: number },
    start: (ws: WebSocket) => S,
  ): void {
    this.wss.handleUpgrade(req, socket, head, (ws) => {
      this.sockets.add(ws);
      const session = start(ws);
      this.sessions.add(session);
      ws.on('close', (code) => {
        record.closeCode = code;
        session.stop();
        this.sessions.delete(session);
        this.sockets.delete(ws);
      });
    });
  }

  /** Drops every connection at once, as a vendor outage would (close code 1011). */
  dropAll(): void {
    for (const ws of this.sockets) ws.close(CLOSE.internalError, 'emulated outage');
  }

  close(): void {
    for (const session of this.sessions) session.stop();
    for (const ws of this.sockets) ws.terminate();
    this.sockets.clear();
  }
}

/** A request body as text, or undefined when it is larger than `maxBytes` (the rest is read and dropped). */
export function readBody(req: IncomingMessage, maxBytes: number): Promise<string | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let bytes = 0;
    req.on('data', (chunk: Buffer) => {
      bytes += chunk.length;
      if (bytes <= maxBytes) chunks.push(chunk);
    });
    req.on('end', () => resolve(bytes > maxBytes ? undefined : Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}
