import { randomUUID } from 'node:crypto';
import type { WebSocket } from 'ws';
import {
  AURA_DEFAULT_ENCODING,
  AURA_DEFAULT_SAMPLE_RATE_HZ,
  AURA_ENCODINGS,
  AURA_FLUSH_LIMIT,
  AURA_SAMPLE_RATES_HZ,
  type AuraEncoding,
  speakClientMessage,
} from '../../providers/tts/deepgram-aura/aura-messages.js';
import { CLOSE } from '../../shared/close-codes.js';
import {
  MAX_RECORDED_MESSAGES,
  type RecordedDeepgramConnection,
  type Resolved,
  type Session,
} from './deepgram-emulator-shared.js';
import { type ToneFormat, send, toneAudio } from './emulator-kit.js';

/**
 * Deepgram Aura text-to-speech on the `/v1/speak` websocket, emulated (docs/providers.md section
 * 6b): one connection's session, served by `DeepgramEmulator` once its handshake passed. What it
 * answers and when is described on `DeepgramEmulator`.
 */

const DEFAULT_SPEAK_MODEL = 'aura-asteria-en';

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

export class SpeakSession implements Session {
  readonly path = 'speak' as const;
  stalled = false;
  private readonly model: string;
  private readonly encoding: AuraEncoding;
  private readonly sampleRateHz: number;
  private readonly bytesPerSample: number;
  private readonly speed: number;
  private readonly tone: ToneFormat;
  private readonly chunkBytes: number;
  private readonly modelUuid = randomUUID();
  private textBuffer = '';
  private readonly jobs: SpeakJob[] = [];
  private active: ActiveJob | undefined;
  /** Shared by Flushed and Cleared, in the order the requests came. */
  private nextSequenceId = 0;
  /** Where in the endless tone the next chunk starts, in samples (kept within one second). */
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
    this.tone = { encoding: this.encoding === 'linear16' ? 's16le' : this.encoding, sampleRateHz: this.sampleRateHz };
    this.chunkBytes =
      Math.max(1, Math.round((this.sampleRateHz * env.options.ttsChunkMs) / 1000)) * this.bytesPerSample;
  }

  start(): void {
    if (this.stalled) return;
    send(this.ws, {
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
        this.ws.close(CLOSE.normal);
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
    send(this.ws, { type: 'Cleared', sequence_id: this.nextSequenceId++ });
  }

  private startNextJob(): void {
    const job = this.jobs.shift();
    if (!job) return;
    const samples = Math.round(
      (job.text.length * this.env.options.ttsMsPerChar * this.sampleRateHz) / 1000 / this.speed,
    );
    const active: ActiveJob = { job, remainingBytes: samples * this.bytesPerSample, timer: undefined };
    if (active.remainingBytes === 0) {
      send(this.ws, { type: 'Flushed', sequence_id: job.sequenceId });
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
    send(this.ws, { type: 'Flushed', sequence_id: active.job.sequenceId });
    this.startNextJob();
  }

  private sendChunk(active: ActiveJob): void {
    const bytes = Math.min(this.chunkBytes, active.remainingBytes);
    this.ws.send(toneAudio(this.tone, this.tonePosition, bytes / this.bytesPerSample));
    this.tonePosition = (this.tonePosition + bytes / this.bytesPerSample) % this.sampleRateHz;
    active.remainingBytes -= bytes;
    this.record.audioBytes += bytes;
    this.record.audioFrames += 1;
    this.env.stats.audioBytesSent += bytes;
  }

  private warn(description: string, code: string): void {
    send(this.ws, { type: 'Warning', description, code });
  }

  private remember(message: unknown): void {
    if (this.record.messages.length < MAX_RECORDED_MESSAGES) this.record.messages.push(message);
  }
}

export function checkSpeakQuery(query: URLSearchParams): string | undefined {
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
