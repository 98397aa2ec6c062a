import type { IncomingMessage, ServerResponse } from 'node:http';
import { speechRequest } from '../../providers/tts/openai-tts/openai-tts-messages.js';
import {
  ToneStream,
  bearer,
  describeIssues,
  pushBounded,
  readBody,
  recordedHeaders,
  speechDurationMs,
} from './emulator-kit.js';
import { DEFAULT_EMULATOR_LATENCIES, type EmulatorLatencies, type VendorEmulator } from './types.js';
import { FaultPlan } from './fault-plan.js';

/**
 * OpenAI's speech endpoint, `POST …/v1/audio/speech` (per OpenAI's public API reference), emulated:
 * Bearer auth (401 in OpenAI's error shape without a valid key), the body validated with zod (400
 * `invalid_request_error` naming the field), and tone audio (60 ms per character of input) in
 * `response_format` `pcm` (raw 24 kHz 16-bit LE mono) or `wav` (the same with a header), streamed
 * in chunks at the emulated pace. Other formats (mp3, opus, aac, flac, the default mp3 included)
 * and `stream_format: "sse"` are refused with a 400: the emulator does not encode them. It claims
 * only `/v1/audio/speech`; the chat emulator serves the rest of OpenAI's API.
 *
 * Cost per request: one timer per audio chunk (100 ms of audio by default).
 */

export interface OpenAiTtsEmulatorOptions {
  /** ttsFirstByteMs and ttsRealTimeFactor apply. */
  latencies?: Partial<EmulatorLatencies>;
  /** The one key accepted; by default any non-empty key is. */
  apiKey?: string;
  /** Audio per written chunk, in ms of audio. Default 100. */
  chunkMs?: number;
  /** Requests kept in `requests` (oldest dropped first). Default 500. */
  maxRecorded?: number;
}

export interface RecordedSpeechRequest {
  method: string;
  path: string;
  /** Request headers; authorization reads [redacted]. */
  headers: Record<string, string>;
  /** The parsed JSON body (undefined when it was not JSON). */
  body: unknown;
  /** The status sent (undefined while unanswered, e.g. a `hang` fault). */
  status?: number;
  /** Audio bytes written (the WAV header excluded). */
  audioBytes: number;
  /** The client closed the connection before the response was complete (barge-in, timeout). */
  abortedByClient: boolean;
}

export interface OpenAiTtsEmulatorStats {
  requests: number;
  completed: number;
  abortedByClient: number;
  active: number;
  audioBytes: number;
}

/** A response being written (or held open by a `hang` fault). */
interface OpenResponse {
  stream?: ToneStream;
  timer?: NodeJS.Timeout;
  /** close() ended it: not counted as a client abort. */
  closedByEmulator: boolean;
}

const SAMPLE_RATE_HZ = 24_000;
const DEFAULT_CHUNK_MS = 100;
const DEFAULT_MAX_RECORDED = 500;
const MAX_BODY_BYTES = 64 * 1024;

export class OpenAiTtsEmulator implements VendorEmulator {
  readonly vendor = 'openai_tts';

  /**
   * Faults to play on the next requests (fault-plan.ts): `reject` (this HTTP status with OpenAI's
   * error body), `error` (a 500 `server_error`, as OpenAI answers an internal failure), `hang`
   * (read and never answered: no headers, no bytes), `drop` (the response's connection destroyed
   * this long after its headers, mid-audio).
   */
  readonly faults = new FaultPlan();

  readonly requests: RecordedSpeechRequest[] = [];
  readonly stats: OpenAiTtsEmulatorStats = { requests: 0, completed: 0, abortedByClient: 0, active: 0, audioBytes: 0 };

  private readonly latencies: EmulatorLatencies;
  private readonly expectedKey: string | undefined;
  private readonly chunkMs: number;
  private readonly maxRecorded: number;
  private readonly open = new Map<ServerResponse, OpenResponse>();

  constructor(options: OpenAiTtsEmulatorOptions = {}) {
    this.latencies = { ...DEFAULT_EMULATOR_LATENCIES, ...options.latencies };
    this.expectedKey = options.apiKey;
    this.chunkMs = options.chunkMs ?? DEFAULT_CHUNK_MS;
    this.maxRecorded = options.maxRecorded ?? DEFAULT_MAX_RECORDED;
  }

  handleHttp(req: IncomingMessage, res: ServerResponse): boolean {
    const url = new URL(req.url ?? '/', 'http://emulator');
    if (!url.pathname.endsWith('/v1/audio/speech')) return false;
    this.serve(req, res, url).catch(() => {
      if (!res.headersSent) sendError(res, 500, 'The emulator failed.', 'server_error');
      else res.destroy();
    });
    return true;
  }

  close(): void {
    for (const [res, state] of this.open) {
      state.stream?.stop();
      clearTimeout(state.timer);
      state.closedByEmulator = true;
      res.destroy();
    }
  }

  private async serve(req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
    const record: RecordedSpeechRequest = {
      method: req.method ?? 'GET',
      path: url.pathname + url.search,
      headers: recordedHeaders(req, ['authorization']),
      body: undefined,
      audioBytes: 0,
      abortedByClient: false,
    };
    pushBounded(this.requests, record, this.maxRecorded);
    this.stats.requests += 1;
    const state = this.track(res, record);
    const answer = (status: number, message: string, type: string, extra: { param?: string; code?: string } = {}) => {
      record.status = status;
      sendError(res, status, message, type, extra);
    };

    if (req.method !== 'POST')
      return answer(405, `Method ${req.method} not allowed; use POST.`, 'invalid_request_error');
    const raw = await readBody(req, MAX_BODY_BYTES);
    if (raw === undefined) return answer(413, 'The request body is too large.', 'invalid_request_error');
    try {
      record.body = JSON.parse(raw);
    } catch {
      return answer(400, 'We could not parse the JSON body of your request.', 'invalid_request_error');
    }

    const fault = this.faults.take(['reject', 'error', 'hang']);
    if (fault?.kind === 'reject') {
      const { status } = fault;
      return answer(
        status,
        fault.message ?? `Emulated failure (HTTP ${status}).`,
        status === 429 ? 'rate_limit_exceeded' : status >= 500 ? 'server_error' : 'invalid_request_error',
      );
    }
    if (fault?.kind === 'error') {
      return answer(500, 'The server had an error while processing your request.', 'server_error');
    }
    if (fault?.kind === 'hang') return;
    const key = bearer(req);
    if (key === undefined) {
      return answer(
        401,
        "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).",
        'invalid_request_error',
      );
    }
    if (this.expectedKey !== undefined && key !== this.expectedKey) {
      return answer(401, 'Incorrect API key provided.', 'invalid_request_error', { code: 'invalid_api_key' });
    }
    const parsed = speechRequest.safeParse(record.body);
    if (!parsed.success) {
      const param = parsed.error.issues[0]?.path.map(String).join('.');
      return answer(400, describeIssues(parsed.error.issues), 'invalid_request_error', { param });
    }
    const request = parsed.data;
    const format = request.response_format ?? 'mp3';
    if (format !== 'pcm' && format !== 'wav') {
      return answer(
        400,
        `The emulator produces response_format pcm and wav only, not ${format}.`,
        'invalid_request_error',
        { param: 'response_format' },
      );
    }
    if (request.stream_format === 'sse') {
      return answer(
        400,
        'The emulator streams raw audio only; stream_format "sse" is not emulated.',
        'invalid_request_error',
        { param: 'stream_format' },
      );
    }

    const durationMs = speechDurationMs(request.input);
    record.status = 200;
    res.writeHead(200, {
      'content-type': format === 'pcm' ? 'audio/pcm' : 'audio/wav',
      'transfer-encoding': 'chunked',
    });
    res.flushHeaders();
    if (format === 'wav') res.write(wavHeader(Math.round((durationMs * SAMPLE_RATE_HZ) / 1000) * 2));
    const drop = this.faults.take(['drop']);
    if (drop) state.timer = setTimeout(() => res.destroy(), drop.afterMs);

    const stream = new ToneStream(
      { encoding: 's16le', sampleRateHz: SAMPLE_RATE_HZ },
      {
        firstByteMs: this.latencies.ttsFirstByteMs,
        realTimeFactor: this.latencies.ttsRealTimeFactor,
        chunkMs: this.chunkMs,
      },
    );
    state.stream = stream;
    stream.play(
      durationMs,
      (audio) => {
        if (res.destroyed) return stream.stop();
        record.audioBytes += audio.length;
        this.stats.audioBytes += audio.length;
        res.write(audio);
      },
      () => res.end(),
    );
  }

  private track(res: ServerResponse, record: RecordedSpeechRequest): OpenResponse {
    const state: OpenResponse = { closedByEmulator: false };
    this.open.set(res, state);
    this.stats.active += 1;
    res.on('close', () => {
      state.stream?.stop();
      clearTimeout(state.timer);
      this.open.delete(res);
      this.stats.active -= 1;
      if (res.writableFinished) {
        this.stats.completed += 1;
      } else if (!state.closedByEmulator) {
        record.abortedByClient = true;
        this.stats.abortedByClient += 1;
      }
    });
    return state;
  }
}

function sendError(
  res: ServerResponse,
  status: number,
  message: string,
  type: string,
  extra: { param?: string; code?: string } = {},
): void {
  if (res.destroyed || res.headersSent) return;
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ error: { message, type, param: extra.param ?? null, code: extra.code ?? null } }));
}

/** A 44-byte PCM WAV header for 24 kHz 16-bit mono audio of `dataBytes`. */
function wavHeader(dataBytes: number): Buffer {
  const header = Buffer.alloc(44);
  header.write('RIFF', 0, 'ascii');
  header.writeUInt32LE(36 + dataBytes, 4);
  header.write('WAVEfmt ', 8, 'ascii');
  header.writeUInt32LE(16, 16);
  header.writeUInt16LE(1, 20);
  header.writeUInt16LE(1, 22);
  header.writeUInt32LE(SAMPLE_RATE_HZ, 24);
  header.writeUInt32LE(SAMPLE_RATE_HZ * 2, 28);
  header.writeUInt16LE(2, 32);
  header.writeUInt16LE(16, 34);
  header.write('data', 36, 'ascii');
  header.writeUInt32LE(dataBytes, 40);
  return header;
}
