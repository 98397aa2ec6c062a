import { createHash, randomUUID } from 'node:crypto';
import alawmulaw from 'alawmulaw';
import type { WebSocket } from 'ws';
import { decodeMulaw } from '../../audio/mulaw.js';
import {
  CLOSE_REASONS,
  type ResultsMessage,
  listenClientMessage,
} from '../../providers/stt/deepgram/deepgram-messages.js';
import { CLOSE } from '../../shared/close-codes.js';
import {
  MAX_RECORDED_MESSAGES,
  type RecordedDeepgramConnection,
  type Resolved,
  type Session,
  WINDOW_MS,
} from './deepgram-emulator-shared.js';
import { send } from './emulator-kit.js';

/**
 * Deepgram live transcription on `/v1/listen`, emulated (docs/providers.md section 1): one
 * connection's session, served by `DeepgramEmulator` once its handshake passed. What it answers
 * and when is described on `DeepgramEmulator`.
 */

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

export class ListenSession implements Session {
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
    this.ws.close(CLOSE.internalError, CLOSE_REASONS.clientIdle);
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
      send(this.ws, { type: 'UtteranceEnd', channel: [0, 1], last_word_end: this.lastWordEndMs / 1000 });
      this.lastWordEndMs = undefined;
    }
  }

  private beginUtterance(startMs: number): void {
    const transcripts = this.env.options.transcripts;
    const text = transcripts[this.transcriptIndex % transcripts.length]!;
    this.transcriptIndex += 1;
    this.utterance = { text: this.params.formatted ? text : unformatted(text), startMs, lastInterimMs: startMs };
    if (this.params.vadEvents) send(this.ws, { type: 'SpeechStarted', channel: [0, 1], timestamp: startMs / 1000 });
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
    send(this.ws, {
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
    this.ws.close(CLOSE.normal);
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
    send(this.ws, message);
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
export function checkListenQuery(query: URLSearchParams): string | undefined {
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
