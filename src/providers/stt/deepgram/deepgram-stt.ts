import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import WebSocket from 'ws';
import { type DeepgramSocket, connectDeepgram } from '../../deepgram-socket.js';
import type { EndpointGuard } from '../../endpoint.js';
import { type ProviderContext, ProviderError, type SttEvent, type SttProvider, type SttStream } from '../../types.js';
import { type AudioFormat, MULAW_8K } from '../../../audio/audio-format.js';
import { CallerAudioMessages } from '../../../audio/caller-audio-messages.js';
import {
  CLOSE_STREAM_FRAME,
  FINALIZE_FRAME,
  KEEP_ALIVE_FRAME,
  LISTEN_SERVER_MESSAGE_TYPES,
  type ResultsMessage,
  listenServerMessage,
  messageEnvelope,
} from './deepgram-messages.js';
import { abortError } from '../../vendor-errors.js';

const PROVIDER = 'deepgram';
/** 8 kHz mu-law: one byte per sample. */
const BYTES_PER_SEC = 8000;
/** Replayed audio goes out in 200 ms frames rather than one large one. */
const REPLAY_FRAME_BYTES = 1600;
/**
 * Audio queued in the socket but not yet on the wire (8 s of it) means the connection has
 * stalled; it is dropped and reopened, and the history replays what the vendor may have missed.
 */
const MAX_BUFFERED_BYTES = 64_000;
/** The longest wait between two reconnection attempts. */
const MAX_BACKOFF_MS = 4000;

export interface DeepgramSttConfig {
  /** The full websocket URL with its query, e.g. `wss://api.deepgram.com/v1/listen?model=nova-3&...`. */
  url: string;
  apiKey: string;
  /** Bounds each handshake (first open and every reconnection attempt). */
  timeoutMs: number;
  /** A KeepAlive goes out when nothing was sent for this long (Deepgram closes after 10 s). */
  keepAliveIntervalMs: number;
  /** After CloseStream, how long to wait for the server's last results and its close. */
  closeWaitMs: number;
  /** Handshakes tried after an unexpected drop before the stream reports an error. */
  reconnectAttempts: number;
  /** Wait before the second attempt; doubles for each further one (the first is immediate). */
  reconnectBackoffMs: number;
  /** Recent audio kept for replay after a drop: the part not yet covered by a final result. */
  replayBufferMs: number;
  /** Set for a bot's own base_url: connections check the addresses its host resolves to. */
  guard?: EndpointGuard;
}

/**
 * Deepgram live transcription over its websocket (docs/providers.md section 1). One socket per call,
 * opened when the call arrives; the caller's 20 ms mu-law frames go out as binary messages of 40 ms
 * (speech and the quiet just after it) or 100 ms (the rest of the quiet), as CallerAudioMessages
 * cuts them, and audio still waiting goes out before any Finalize or CloseStream, so a final
 * always covers everything written.
 * Results map to interim/final events, SpeechStarted and UtteranceEnd to their events.
 *
 * The socket is kept alive with KeepAlive frames when no audio flows. If it drops unexpectedly,
 * the stream reopens it (bounded attempts with backoff) and replays the recent audio no final
 * result has covered yet, including what was written while it was down, so the turn in progress
 * is transcribed on the new socket. Only when reopening fails for good does an `error` event go
 * out.
 */
export class DeepgramStt implements SttProvider {
  readonly name = PROVIDER;
  readonly inputFormat: AudioFormat = MULAW_8K;

  constructor(readonly config: DeepgramSttConfig) {}

  /** Resolves once the first socket is open, so the stream never holds input of its own before it (see SttProvider.open). */
  async open(ctx: ProviderContext, onEvent: (event: SttEvent) => void): Promise<SttStream> {
    if (ctx.signal.aborted) throw abortError();
    const stream = new DeepgramSttStream(this.config, ctx, onEvent);
    await stream.start();
    return stream;
  }
}

type StreamState = 'connecting' | 'open' | 'reconnecting' | 'closing' | 'closed' | 'failed';

class DeepgramSttStream implements SttStream {
  private state: StreamState = 'connecting';
  private socket: DeepgramSocket | undefined;
  private readonly history: AudioHistory;
  /**
   * Audio written but not yet sent on the current socket, until it fills a message. Offsets
   * (history, finalizedOffset) count what was written; the socket has received all but this.
   */
  private readonly outgoing = new CallerAudioMessages((audio) => this.sendAudio(audio), false);
  /** Stream offset (bytes since the call's first frame) of the current socket's first byte. */
  private socketStartOffset = 0;
  /** Stream offset up to which the vendor has returned final results. */
  private finalizedOffset = 0;
  /** finalize() was called and no final result has arrived since: repeated after a reconnect. */
  private finalizePending = false;
  private lastSendMs = 0;
  private keepAliveTimer: NodeJS.Timeout | undefined;
  /** Aborted by close(): ends reconnection waits and handshakes in flight. */
  private readonly stopController = new AbortController();
  private readonly stopSignal: AbortSignal;
  private closing: Promise<void> | undefined;
  private onServerClosed: (() => void) | undefined;
  private readonly log: Logger;

  constructor(
    private readonly config: DeepgramSttConfig,
    private readonly ctx: ProviderContext,
    private readonly onEvent: (event: SttEvent) => void,
  ) {
    this.history = new AudioHistory(Math.round((config.replayBufferMs * BYTES_PER_SEC) / 1000));
    this.stopSignal = AbortSignal.any([ctx.signal, this.stopController.signal]);
    this.log = ctx.log;
  }

  /** Opens the first socket; rejects with a ProviderError (or the abort error). */
  async start(): Promise<void> {
    await this.connect();
    this.state = 'open';
    this.lastSendMs = performance.now();
    const tickMs = Math.max(10, Math.floor(this.config.keepAliveIntervalMs / 2));
    this.keepAliveTimer = setInterval(() => this.keepAlive(), tickMs);
    this.keepAliveTimer.unref();
    // The call is over: tell the vendor (CloseStream) and stop reporting.
    this.ctx.signal.addEventListener('abort', () => void this.close(), { once: true });
  }

  write(audio: Uint8Array): void {
    const state = this.state;
    if (state === 'closing' || state === 'closed' || state === 'failed') return;
    // Deepgram reads an empty binary frame as "close the stream".
    if (audio.length === 0) return;
    // `audio` is lent: the history and the outgoing message each copy it.
    this.history.push(audio);
    // While the socket is down the history alone keeps the audio; resume() replays it.
    if (state !== 'open' || this.socket!.ws.readyState !== WebSocket.OPEN) return;
    this.outgoing.push(audio);
  }

  finalize(): void {
    const state = this.state;
    if (state === 'closing' || state === 'closed' || state === 'failed') return;
    this.finalizePending = true;
    if (state !== 'open') return;
    this.sendWaitingAudio();
    this.sendText(FINALIZE_FRAME);
  }

  close(): Promise<void> {
    this.closing ??= this.shutdown();
    return this.closing;
  }

  private async shutdown(): Promise<void> {
    const previous = this.state;
    this.state = 'closing';
    clearInterval(this.keepAliveTimer);
    this.stopController.abort();
    const ws = this.socket?.ws;
    if (ws && previous === 'open' && ws.readyState === WebSocket.OPEN) {
      // CloseStream makes the server send the last results and Metadata, then close.
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, this.config.closeWaitMs);
        timer.unref();
        this.onServerClosed = done;
        function done(): void {
          clearTimeout(timer);
          resolve();
        }
        try {
          this.sendWaitingAudio();
          ws.send(CLOSE_STREAM_FRAME);
        } catch {
          done();
        }
      });
    }
    if (ws && ws.readyState !== WebSocket.CLOSED) ws.terminate();
    this.state = 'closed';
  }

  private connect(): Promise<void> {
    const socket: DeepgramSocket = connectDeepgram({
      provider: PROVIDER,
      url: this.config.url,
      lookup: this.config.guard?.lookup,
      apiKey: this.config.apiKey,
      timeoutMs: this.config.timeoutMs,
      signal: this.stopSignal,
      log: this.log,
      onText: (text) => {
        if (this.socket === socket) this.onText(text);
      },
      onBinary: () => this.log.debug({ provider: PROVIDER }, 'skipped an unexpected binary frame'),
      onClose: (code, reason) => this.onSocketClosed(socket, code, reason),
    });
    this.socket = socket;
    return socket.opened;
  }

  private onSocketClosed(socket: DeepgramSocket, code: number, reason: string): void {
    if (socket !== this.socket) return;
    if (this.state === 'closing' || this.state === 'closed') {
      this.onServerClosed?.();
      return;
    }
    if (this.state === 'open') void this.reconnect(code, reason);
  }

  private async reconnect(code: number, reason: string): Promise<void> {
    this.state = 'reconnecting';
    this.log.warn({ provider: PROVIDER, code, reason }, 'speech-to-text connection dropped; reconnecting');
    const attempts = Math.max(1, this.config.reconnectAttempts);
    let lastError: ProviderError | undefined;
    for (let attempt = 1; attempt <= attempts; attempt++) {
      const delayMs = attempt === 1 ? 0 : Math.min(this.config.reconnectBackoffMs * 2 ** (attempt - 2), MAX_BACKOFF_MS);
      if (delayMs > 0 && !(await sleep(delayMs, true, { signal: this.stopSignal }).catch(() => false))) return;
      if (this.state !== 'reconnecting') return;
      try {
        await this.connect();
      } catch (err) {
        if (this.state !== 'reconnecting') return;
        lastError = err instanceof ProviderError ? err : new ProviderError(PROVIDER, String(err), true, { cause: err });
        this.log.debug({ provider: PROVIDER, attempt, err: lastError }, 'speech-to-text reconnection attempt failed');
        if (!lastError.retryable) break;
        continue;
      }
      if (this.state !== 'reconnecting') return;
      this.resume(attempt);
      return;
    }
    this.state = 'failed';
    clearInterval(this.keepAliveTimer);
    const closed = `code ${code}${reason ? ` ${reason}` : ''}`;
    const detail = lastError ? lastError.message.replace(`${PROVIDER}: `, '') : 'no attempt was made';
    this.emit({
      type: 'error',
      error: new ProviderError(
        PROVIDER,
        `the connection dropped (${closed}) and could not be reopened: ${detail}`,
        lastError?.retryable ?? true,
        { cause: lastError },
      ),
    });
  }

  /** The socket is back: replay what no final covers yet, then carry on live. */
  private resume(attempt: number): void {
    const from = Math.min(Math.max(this.finalizedOffset, this.history.oldestOffset), this.history.endOffset);
    const replay = this.history.since(from);
    this.socketStartOffset = from;
    // The replay runs to the newest byte written, which includes any audio that was waiting.
    this.outgoing.reset();
    this.state = 'open';
    const ws = this.socket!.ws;
    for (let at = 0; at < replay.length; at += REPLAY_FRAME_BYTES)
      ws.send(replay.subarray(at, at + REPLAY_FRAME_BYTES));
    this.lastSendMs = performance.now();
    if (this.finalizePending) this.sendText(FINALIZE_FRAME);
    this.log.info(
      { provider: PROVIDER, attempt, replayedMs: Math.round((replay.length * 1000) / BYTES_PER_SEC) },
      'speech-to-text reconnected',
    );
  }

  /**
   * Nothing sent for the interval: a KeepAlive, or the frame still waiting for its pair if there
   * is one (audio keeps the socket open as well). No timer per frame is needed for that tail: a
   * carrier that stopped sending brings no new speech, the vendor cannot end an utterance on
   * audio it does not get, and a Finalize or CloseStream sends the tail at once.
   */
  private keepAlive(): void {
    if (this.state !== 'open' || performance.now() - this.lastSendMs < this.config.keepAliveIntervalMs) return;
    if (this.outgoing.waitingBytes > 0) this.sendWaitingAudio();
    else this.sendText(KEEP_ALIVE_FRAME);
  }

  /** Sends the audio that does not fill a message yet (a Finalize or CloseStream must follow all of it). */
  private sendWaitingAudio(): void {
    this.outgoing.drain();
  }

  private sendAudio(audio: Uint8Array): void {
    const ws = this.socket?.ws;
    if (!ws || ws.readyState !== WebSocket.OPEN) return;
    if (ws.bufferedAmount > MAX_BUFFERED_BYTES) {
      this.log.warn(
        { provider: PROVIDER, bufferedBytes: ws.bufferedAmount },
        'speech-to-text connection stalled; reopening it',
      );
      ws.terminate();
      return;
    }
    ws.send(audio);
    this.lastSendMs = performance.now();
  }

  private sendText(frame: string): void {
    const ws = this.socket?.ws;
    if (!ws || ws.readyState !== WebSocket.OPEN) return;
    ws.send(frame);
    this.lastSendMs = performance.now();
  }

  private onText(text: string): void {
    if (this.ctx.signal.aborted || this.state === 'closed') return;
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      this.log.debug({ provider: PROVIDER, chars: text.length }, 'skipped a frame that is not JSON');
      return;
    }
    const envelope = messageEnvelope.safeParse(json);
    if (!envelope.success || !LISTEN_SERVER_MESSAGE_TYPES.has(envelope.data.type)) {
      this.log.debug({ provider: PROVIDER, type: envelope.data?.type }, 'skipped a message of unknown type');
      return;
    }
    const parsed = listenServerMessage.safeParse(json);
    if (!parsed.success) {
      this.log.debug(
        {
          provider: PROVIDER,
          type: envelope.data.type,
          issues: parsed.error.issues.map((issue) => issue.path.join('.')),
        },
        'skipped a malformed message',
      );
      return;
    }
    const message = parsed.data;
    switch (message.type) {
      case 'Results':
        this.onResults(message);
        return;
      case 'SpeechStarted':
        this.emit({ type: 'speech-started' });
        return;
      case 'UtteranceEnd':
        this.emit({ type: 'utterance-end' });
        return;
      case 'Metadata':
        this.log.debug(
          { provider: PROVIDER, requestId: message.request_id, durationSecs: message.duration },
          'speech-to-text metadata',
        );
        return;
    }
  }

  private onResults(message: ResultsMessage): void {
    const text = message.channel.alternatives[0]?.transcript ?? '';
    if (message.is_final) {
      // Times are seconds of the audio this socket received, which began at socketStartOffset.
      if (message.start !== undefined && message.duration !== undefined) {
        const endOffset = this.socketStartOffset + Math.round((message.start + message.duration) * BYTES_PER_SEC);
        if (endOffset > this.finalizedOffset) this.finalizedOffset = endOffset;
      }
      this.finalizePending = false;
      // Empty finals are passed on too: they answer a Finalize when the caller said nothing.
      this.emit({
        type: 'final',
        text,
        speechFinal: message.speech_final === true,
        ...(this.finalizedOffset > 0 ? { coveredToMs: (this.finalizedOffset * 1000) / BYTES_PER_SEC } : {}),
      });
    } else if (text.length > 0) {
      this.emit({ type: 'interim', text });
    }
  }

  private emit(event: SttEvent): void {
    try {
      this.onEvent(event);
    } catch (err) {
      this.log.warn({ provider: PROVIDER, err, event: event.type }, 'speech-to-text event handler threw');
    }
  }
}

/**
 * The most recent audio written to a stream, addressed by stream offset (bytes since the first
 * frame), in a fixed ring so the per-frame cost is one small copy.
 */
class AudioHistory {
  private readonly ring: Uint8Array;
  /** Stream offset just past the newest byte. */
  endOffset = 0;

  constructor(capacityBytes: number) {
    this.ring = new Uint8Array(Math.max(0, capacityBytes));
  }

  get oldestOffset(): number {
    return Math.max(0, this.endOffset - this.ring.length);
  }

  push(audio: Uint8Array): void {
    const capacity = this.ring.length;
    if (capacity > 0) {
      const kept = audio.length > capacity ? audio.subarray(audio.length - capacity) : audio;
      const at = (this.endOffset + audio.length - kept.length) % capacity;
      const first = Math.min(kept.length, capacity - at);
      this.ring.set(kept.subarray(0, first), at);
      if (first < kept.length) this.ring.set(kept.subarray(first), 0);
    }
    this.endOffset += audio.length;
  }

  /** A copy of the audio from `offset` (or the oldest kept) to the newest. */
  since(offset: number): Uint8Array {
    const capacity = this.ring.length;
    const from = Math.max(offset, this.oldestOffset);
    const length = Math.max(0, this.endOffset - from);
    const out = new Uint8Array(length);
    if (length === 0) return out;
    const at = from % capacity;
    const first = Math.min(length, capacity - at);
    out.set(this.ring.subarray(at, at + first), 0);
    if (first < length) out.set(this.ring.subarray(0, length - first), first);
    return out;
  }
}
