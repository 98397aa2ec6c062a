import type { IncomingMessage, ServerResponse } from 'node:http';
import { z } from 'zod';
import {
  ToneStream,
  describeIssues,
  header,
  pushBounded,
  readBody,
  recordedHeaders,
  speechDurationMs,
  type ToneFormat,
} from './emulator-kit.js';
import type { EmulatorLatencies } from './types.js';

/**
 * ElevenLabs text-to-speech over HTTP, emulated: `POST /v1/text-to-speech/{voice_id}` and
 * `…/{voice_id}/stream`, the key in `xi-api-key` (401 without a valid one), the body's `text`
 * required (422 with a `detail` list, as the API validates), `output_format` in the query. The
 * answer is tone audio, 60 ms per character, written in chunks at the emulated pace. This is the
 * streaming TTS that ElevenLabs' own SDK offers (`textToSpeech.stream`); the adapter uses the
 * multi-context websocket instead. Formats the emulator cannot encode (the default
 * mp3_44100_128 among them) get a 400.
 */

const PATH = /^(?:.*)\/v1\/text-to-speech\/([^/]+)(\/stream)?$/;
const MAX_BODY_BYTES = 64 * 1024;

const speechBody = z.looseObject({
  text: z.string().min(1),
  model_id: z.string().min(1).optional(),
  voice_settings: z.looseObject({}).nullish(),
});

export interface RecordedElevenLabsSpeechRequest {
  voiceId: string;
  streaming: boolean;
  /** Path and query. */
  path: string;
  /** Request headers; xi-api-key reads [redacted]. */
  headers: Record<string, string>;
  body: unknown;
  status?: number;
  audioBytes: number;
}

export interface ElevenLabsHttpOptions {
  latencies: EmulatorLatencies;
  expectedKey: string | undefined;
  chunkMs: number;
  maxRecorded: number;
  /** The output formats the emulator produces, as tone formats; undefined for the others. */
  toneFormat(outputFormat: string): ToneFormat | undefined;
}

export class ElevenLabsHttpEmulator {
  readonly requests: RecordedElevenLabsSpeechRequest[] = [];
  private readonly open = new Set<{ res: ServerResponse; stream?: ToneStream }>();

  constructor(private readonly options: ElevenLabsHttpOptions) {}

  handleHttp(req: IncomingMessage, res: ServerResponse): boolean {
    const url = new URL(req.url ?? '/', 'http://emulator');
    const match = PATH.exec(url.pathname);
    if (!match) return false;
    const record: RecordedElevenLabsSpeechRequest = {
      voiceId: decodeURIComponent(match[1]!),
      streaming: match[2] !== undefined,
      path: url.pathname + url.search,
      headers: recordedHeaders(req, ['xi-api-key']),
      body: undefined,
      audioBytes: 0,
    };
    pushBounded(this.requests, record, this.options.maxRecorded);
    this.serve(req, res, url, record).catch(() =>
      answer(res, record, 500, { status: 'internal_error', message: 'emulator failure' }),
    );
    return true;
  }

  close(): void {
    for (const entry of this.open) {
      entry.stream?.stop();
      entry.res.destroy();
    }
    this.open.clear();
  }

  private async serve(
    req: IncomingMessage,
    res: ServerResponse,
    url: URL,
    record: RecordedElevenLabsSpeechRequest,
  ): Promise<void> {
    if (req.method !== 'POST')
      return answer(res, record, 405, { status: 'method_not_allowed', message: `use POST, not ${req.method}` });
    const key = header(req, 'xi-api-key');
    const { expectedKey } = this.options;
    if (key === undefined || (expectedKey !== undefined && key !== expectedKey)) {
      return answer(res, record, 401, { status: 'invalid_api_key', message: 'Invalid API key' });
    }
    const raw = await readBody(req, MAX_BODY_BYTES);
    if (raw === undefined)
      return answer(res, record, 413, { status: 'request_too_large', message: 'the request body is too large' });
    try {
      record.body = JSON.parse(raw);
    } catch {
      return answer(res, record, 400, { status: 'invalid_json', message: 'the request body is not valid JSON' });
    }
    const parsed = speechBody.safeParse(record.body);
    if (!parsed.success) {
      // The API's validation errors are FastAPI's: 422 with a list of {loc, msg, type}.
      const detail = parsed.error.issues.map((issue) => ({
        loc: ['body', ...issue.path.map(String)],
        msg: issue.message,
        type: 'value_error',
      }));
      record.status = 422;
      res.writeHead(422, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ detail, message: describeIssues(parsed.error.issues) }));
      return;
    }
    const outputFormat = url.searchParams.get('output_format') ?? 'mp3_44100_128';
    const format = this.options.toneFormat(outputFormat);
    if (!format) {
      return answer(res, record, 400, {
        status: 'invalid_output_format',
        message: `the emulator produces ulaw_8000, alaw_8000 and pcm_* only, not ${outputFormat}`,
      });
    }

    record.status = 200;
    // Unconfirmed: the content type ElevenLabs gives raw formats; clients read the bytes regardless.
    res.writeHead(200, { 'content-type': 'application/octet-stream', 'transfer-encoding': 'chunked' });
    res.flushHeaders();
    const { latencies, chunkMs } = this.options;
    const stream = new ToneStream(format, {
      firstByteMs: latencies.ttsFirstByteMs,
      realTimeFactor: latencies.ttsRealTimeFactor,
      chunkMs,
    });
    const entry = { res, stream };
    this.open.add(entry);
    res.on('close', () => {
      stream.stop();
      this.open.delete(entry);
    });
    stream.play(
      speechDurationMs(parsed.data.text),
      (audio) => {
        record.audioBytes += audio.length;
        res.write(audio);
      },
      () => res.end(),
    );
  }
}

function answer(
  res: ServerResponse,
  record: RecordedElevenLabsSpeechRequest,
  status: number,
  detail: { status: string; message: string },
): void {
  record.status = status;
  if (res.destroyed || res.headersSent) return;
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ detail }));
}
