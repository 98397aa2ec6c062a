import type { IncomingMessage, ServerResponse } from 'node:http';
import { z } from 'zod';
import { AURA_SAMPLE_RATES_HZ } from '../../providers/tts/deepgram-aura/aura-messages.js';
import type { Resolved } from './deepgram-emulator-shared.js';
import { type ToneFormat, readBody, toneAudio } from './emulator-kit.js';

/**
 * Deepgram Aura text-to-speech over REST, emulated (docs/providers.md section 6a): `POST
 * /v1/speak?model=&encoding=&sample_rate=&container=` with `{"text": "..."}`, answered with the
 * audio in the body, streamed: the first chunk after ttsFirstByteMs, the rest at
 * ttsRealTimeFactor, ttsMsPerChar per character (divided by `speed`). Deepgram's REST defaults
 * are linear16 in a WAV container at 24 kHz; `container=none` gives raw bytes (what a phone
 * bridge asks for), `container=wav` a 44-byte WAV header first (linear16 only here). Encodings
 * the emulator cannot make (mp3, opus, flac, aac) get a 400 saying so; a request the client
 * aborts stops the stream.
 */

const REST_ENCODINGS = ['linear16', 'mulaw', 'alaw'] as const;
const MAX_BODY_BYTES = 64 * 1024;
const speakBody = z.object({ text: z.string().min(1).max(2000) });

export interface SpeakRestCheck {
  /** The key from `Authorization: Token|Bearer <key>`, or undefined. */
  key: string | undefined;
  requestId: string;
}

interface Refusal {
  status: number;
  errCode: string;
  message: string;
}

const badRequest = (message: string): Refusal => ({ status: 400, errCode: 'Bad Request', message });

/** What Deepgram would refuse in the request line and headers, or undefined. */
function checkRequest(req: IncomingMessage, query: URLSearchParams, env: Resolved, key: string | undefined) {
  if (req.method !== 'POST') return { status: 405, errCode: 'Bad Request', message: 'Use POST.' };
  const expected = env.options.apiKey;
  if (!key || (expected !== undefined && key !== expected)) {
    return { status: 401, errCode: 'INVALID_AUTH', message: 'Invalid credentials.' };
  }
  const encoding = query.get('encoding') ?? 'linear16';
  if (!(REST_ENCODINGS as readonly string[]).includes(encoding)) {
    return badRequest(`The emulator makes ${REST_ENCODINGS.join(', ')} only, not "${encoding}"`);
  }
  const container = query.get('container') ?? (encoding === 'linear16' ? 'wav' : 'none');
  if (container !== 'none' && container !== 'wav') return badRequest(`Invalid container "${container}"`);
  if (container === 'wav' && encoding !== 'linear16') {
    return badRequest('The emulator writes a WAV container for linear16 only');
  }
  if (!(AURA_SAMPLE_RATES_HZ as readonly number[]).includes(Number(query.get('sample_rate') ?? 24000))) {
    return badRequest(`Invalid sample_rate "${query.get('sample_rate')}"`);
  }
  if (!(Number(query.get('speed') ?? 1) > 0)) return badRequest(`Invalid speed "${query.get('speed')}"`);
  return undefined;
}

export function serveSpeakRest(req: IncomingMessage, res: ServerResponse, env: Resolved, check: SpeakRestCheck): void {
  const fail = (refusal: Refusal) => {
    res.writeHead(refusal.status, { 'content-type': 'application/json', 'dg-request-id': check.requestId });
    res.end(JSON.stringify({ err_code: refusal.errCode, err_msg: refusal.message, request_id: check.requestId }));
  };
  const query = new URL(req.url ?? '/', 'http://emulator').searchParams;
  const refusal = checkRequest(req, query, env, check.key);
  if (refusal) {
    fail(refusal);
    req.resume();
    return;
  }
  const encoding = query.get('encoding') ?? 'linear16';
  const wav = (query.get('container') ?? (encoding === 'linear16' ? 'wav' : 'none')) === 'wav';
  const sampleRateHz = Number(query.get('sample_rate') ?? 24000);
  const speed = Number(query.get('speed') ?? 1);
  readBody(req, MAX_BODY_BYTES).then(
    (text) => {
      const parsed = text === undefined ? undefined : speakBody.safeParse(parseJson(text));
      if (text === undefined) fail({ status: 413, errCode: 'Bad Request', message: 'The body is too large.' });
      else if (!parsed?.success) fail(badRequest('The body must be JSON {"text": "<1 to 2000 characters>"}.'));
      else {
        const tone: ToneFormat = {
          encoding: encoding === 'linear16' ? 's16le' : (encoding as 'mulaw' | 'alaw'),
          sampleRateHz,
        };
        const width = encoding === 'linear16' ? 2 : 1;
        const totalSamples = Math.round(
          (parsed.data.text.length * env.options.ttsMsPerChar * sampleRateHz) / 1000 / speed,
        );
        env.stats.audioBytesSent += totalSamples * width;
        stream(res, tone, totalSamples, width, wav, env, check.requestId);
      }
    },
    () => fail(badRequest('The body could not be read.')),
  );
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function stream(
  res: ServerResponse,
  tone: ToneFormat,
  totalSamples: number,
  width: number,
  wav: boolean,
  env: Resolved,
  requestId: string,
): void {
  const chunkSamples = Math.max(1, Math.round((env.options.ttsChunkMs * tone.sampleRateHz) / 1000));
  const factor = env.latencies.ttsRealTimeFactor;
  const intervalMs = factor > 0 && Number.isFinite(factor) ? env.options.ttsChunkMs / factor : 0;
  let sent = 0;
  let timer: NodeJS.Timeout | undefined;
  res.on('close', () => clearTimeout(timer));
  const tick = () => {
    if (res.destroyed) return;
    if (!res.headersSent) {
      res.writeHead(200, {
        'content-type': wav ? 'audio/wav' : 'application/octet-stream',
        'dg-request-id': requestId,
      });
      if (wav) res.write(wavHeader(totalSamples * width, tone.sampleRateHz));
    }
    const count = Math.min(chunkSamples, totalSamples - sent);
    if (count > 0) res.write(toneAudio(tone, sent, count));
    sent += count;
    if (sent >= totalSamples) {
      res.end();
      return;
    }
    timer = setTimeout(tick, intervalMs);
  };
  timer = setTimeout(tick, env.latencies.ttsFirstByteMs);
}

function wavHeader(dataBytes: number, sampleRateHz: number): Buffer {
  const header = Buffer.alloc(44);
  header.write('RIFF', 0, 'ascii');
  header.writeUInt32LE(36 + dataBytes, 4);
  header.write('WAVEfmt ', 8, 'ascii');
  header.writeUInt32LE(16, 16);
  header.writeUInt16LE(1, 20); // PCM
  header.writeUInt16LE(1, 22); // mono
  header.writeUInt32LE(sampleRateHz, 24);
  header.writeUInt32LE(sampleRateHz * 2, 28);
  header.writeUInt16LE(2, 32);
  header.writeUInt16LE(16, 34);
  header.write('data', 36, 'ascii');
  header.writeUInt32LE(dataBytes, 40);
  return header;
}
