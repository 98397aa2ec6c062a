import type { Logger } from 'pino';
import type { RawData, WebSocket } from 'ws';
import { type AudioRateLimits, AudioRateLimiter, DEFAULT_AUDIO_RATE_LIMITS, MAX_AUDIO_MS_PER_MESSAGE } from '../audio/audio-rate-limit.js';
import { StreamingResampler } from '../audio/resample.js';
import { TELEPHONY_SAMPLE_RATE_HZ } from '../audio/frames.js';
import { TokenBucket } from '../security/token-bucket.js';
import { clientMessage, ROOM_CLOSE, serverMessage } from './room-messages.js';
import type { RoomInput, RoomListener } from './room-transport.js';

export interface ParticipantLimits {
  /** How much microphone audio a client may send, per message and per second (as a carrier may). */
  audio: Readonly<AudioRateLimits>;
  /** Messages per second (audio and JSON together) a client may send, and burst. */
  maxMessagesPerSec: number;
  /** Outbound bytes queued in the socket beyond which the client is considered gone. */
  maxBufferedBytes: number;
}

export const DEFAULT_PARTICIPANT_LIMITS: ParticipantLimits = {
  audio: DEFAULT_AUDIO_RATE_LIMITS,
  // A browser sends one audio message per 20 ms (50/s) plus an occasional camera frame.
  maxMessagesPerSec: 200,
  maxBufferedBytes: 2 * 1024 * 1024,
};

/** What the room learns from a browser participant. */
export interface ParticipantEvents {
  /** client-ready arrived: audio may flow now. */
  onReady(participant: BrowserParticipant): void;
  onImage(imageBase64: string): void;
  /** The socket closed, from either side. Called once. */
  onGone(participant: BrowserParticipant, reason: string): void;
}

/**
 * One browser on the room websocket. Listeners are attached in the constructor, before anything
 * awaits. Its microphone (PCM at its own rate) is resampled into the room's 8 kHz input; the
 * bot's audio is resampled to its rate on the way out. Any protocol violation closes the socket
 * with a code and a reason that say what was wrong; nothing else in the room is affected.
 */
export class BrowserParticipant implements RoomListener {
  readonly stats = { audioIn: 0, audioOut: 0, messagesIn: 0 };
  sampleRateHz = 0;

  private input: RoomInput | undefined;
  private inResampler: StreamingResampler | undefined;
  private outResampler: StreamingResampler | undefined;
  private readonly messageBudget: TokenBucket;
  private readonly audioBudget: AudioRateLimiter;
  private gone = false;

  constructor(
    private readonly socket: WebSocket,
    private readonly log: Logger,
    private readonly events: ParticipantEvents,
    private readonly limits: ParticipantLimits = DEFAULT_PARTICIPANT_LIMITS,
  ) {
    this.messageBudget = new TokenBucket(limits.maxMessagesPerSec, limits.maxMessagesPerSec);
    this.audioBudget = new AudioRateLimiter(limits.audio);
    socket.on('message', (data, isBinary) => this.onMessage(data, isBinary));
    socket.on('close', (code, reason) => this.finish(`socket closed (${code}${reason.length ? ` ${reason.toString()}` : ''})`));
    socket.on('error', (err) => {
      this.log.debug({ err }, 'room socket error');
      this.finish('socket error');
    });
  }

  get ready(): boolean {
    return this.sampleRateHz > 0;
  }

  /** The room's mixer input for this participant's audio. */
  connectInput(input: RoomInput): void {
    this.input = input;
  }

  send(message: string): void {
    if (this.writable()) this.socket.send(message);
  }

  close(code: number, reason: string): void {
    if (this.socket.readyState === this.socket.OPEN || this.socket.readyState === this.socket.CONNECTING) {
      this.socket.close(code, reason.slice(0, 120));
    }
    this.finish(reason);
  }

  playBotAudio(pcm8k: Int16Array): void {
    if (!this.outResampler || !this.writable()) return;
    const pcm = this.outResampler.process(pcm8k);
    if (pcm.length === 0) return;
    this.stats.audioOut += 1;
    this.socket.send(Buffer.from(pcm.buffer, pcm.byteOffset, pcm.byteLength));
  }

  clearBotAudio(): void {
    if (!this.outResampler) return;
    this.outResampler.reset();
    // The page holds a little of the bot's audio scheduled ahead: it must drop it too.
    this.send(serverMessage('bot-interrupted'));
  }

  private writable(): boolean {
    if (this.gone || this.socket.readyState !== this.socket.OPEN) return false;
    if (this.socket.bufferedAmount > this.limits.maxBufferedBytes) {
      this.close(ROOM_CLOSE.flood, 'client is not reading');
      return false;
    }
    return true;
  }

  private onMessage(data: RawData, isBinary: boolean): void {
    if (this.gone) return;
    this.stats.messagesIn += 1;
    if (!this.messageBudget.take()) {
      this.close(ROOM_CLOSE.flood, `more than ${this.limits.maxMessagesPerSec} messages a second`);
      return;
    }
    const bytes = Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data as ArrayBuffer);
    if (isBinary) this.onAudio(bytes);
    else this.onJson(bytes.toString('utf8'));
  }

  private onJson(text: string): void {
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      this.close(ROOM_CLOSE.policyViolation, 'malformed message: not JSON');
      return;
    }
    const parsed = clientMessage.safeParse(json);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      const where = issue && issue.path.length > 0 ? `${issue.path.join('.')}: ` : '';
      this.close(ROOM_CLOSE.policyViolation, `malformed message: ${where}${issue?.message ?? 'invalid'}`);
      return;
    }
    const message = parsed.data;
    switch (message.type) {
      case 'client-ready':
        if (this.ready) {
          this.close(ROOM_CLOSE.policyViolation, 'client-ready sent twice');
          return;
        }
        this.sampleRateHz = message.data.audio.sampleRateHz;
        this.inResampler = new StreamingResampler(this.sampleRateHz, TELEPHONY_SAMPLE_RATE_HZ);
        this.outResampler = new StreamingResampler(TELEPHONY_SAMPLE_RATE_HZ, this.sampleRateHz);
        this.events.onReady(this);
        return;
      case 'user-image':
        if (this.ready) this.events.onImage(message.data.imageBase64);
        return;
      case 'disconnect-bot':
        this.close(ROOM_CLOSE.normal, 'participant left');
        return;
    }
  }

  private onAudio(bytes: Buffer): void {
    if (!this.ready || !this.inResampler) {
      this.close(ROOM_CLOSE.policyViolation, 'audio before client-ready');
      return;
    }
    if (bytes.length % 2 !== 0) {
      this.close(ROOM_CLOSE.policyViolation, 'malformed message: audio must be 16-bit PCM (an even number of bytes)');
      return;
    }
    // A microphone cannot produce audio faster than time passes; a little burst is network jitter.
    switch (this.audioBudget.admit((bytes.length / 2 / this.sampleRateHz) * 1000)) {
      case 'too-long':
        this.close(ROOM_CLOSE.messageTooBig, `audio message over ${MAX_AUDIO_MS_PER_MESSAGE} ms`);
        return;
      case 'too-fast':
        this.log.warn({ limits: this.limits.audio }, 'room client sends audio faster than real time');
        this.close(ROOM_CLOSE.flood, 'audio faster than real time');
        return;
      case 'ok':
        break;
    }
    this.stats.audioIn += 1;
    // Copy into an aligned array: the socket's buffer may start at an odd offset.
    const samples = new Int16Array(bytes.length / 2);
    for (let i = 0; i < samples.length; i++) samples[i] = bytes.readInt16LE(i * 2);
    this.input?.push(this.inResampler.process(samples));
  }

  private finish(reason: string): void {
    if (this.gone) return;
    this.gone = true;
    this.events.onGone(this, reason);
  }
}
