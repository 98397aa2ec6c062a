import type { Logger } from 'pino';
import { type Clock, REAL_CLOCK } from '../shared/clock.js';
import type { RawData, WebSocket } from 'ws';
import {
  type AudioRateLimits,
  DEFAULT_AUDIO_RATE_LIMITS,
  PeerBudget,
  type PeerRefusal,
} from '../audio/audio-rate-limit.js';
import { StreamingResampler } from '../audio/resample.js';
import { TELEPHONY_SAMPLE_RATE_HZ } from '../audio/frames.js';
import { pipecatWire } from './pipecat-wire.js';
import { CLOSE } from '../shared/close-codes.js';
import { type ClientMessage, RTVI_LABEL, serverMessage } from './room-messages.js';
import type { ParticipantEvents, RoomParticipant } from './room-participant.js';
import type { RoomInput } from './room-transport.js';
import { jsonWire, type RoomWire } from './room-wire.js';

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

/**
 * A socket's wire. The page offers the `rtvi-ai` subprotocol (first, so the server picks it) and
 * speaks JSON. Pipecat's websocket transport offers no subprotocol, so its first message tells:
 * client-ready in a binary protobuf frame, where the page's would be JSON text.
 */
function wireOf(subprotocol: string, firstMessageIsBinary: boolean): RoomWire {
  if (subprotocol === RTVI_LABEL) return jsonWire;
  return firstMessageIsBinary ? pipecatWire : jsonWire;
}

/**
 * One browser on the room websocket. Listeners are attached in the constructor, before anything
 * awaits. Its microphone (PCM at its own rate) is resampled into the room's 8 kHz input; the
 * bot's audio is resampled to its player's rate on the way out. Any protocol violation closes
 * the socket with a code and a reason that say what was wrong; nothing else in the room is affected.
 */
export class BrowserParticipant implements RoomParticipant {
  readonly stats = { audioIn: 0, audioOut: 0, messagesIn: 0 };
  /** The rate the client plays the bot at; 0 until client-ready. */
  playerRateHz = 0;

  /** How this client frames its messages: chosen by its subprotocol or first message (see wireOf). */
  private wire: RoomWire | undefined;
  /** The microphone rate declared in client-ready (the page's wire). */
  private declaredRateHz: number | undefined;
  private input: RoomInput | undefined;
  private inResampler: StreamingResampler | undefined;
  private outResampler: StreamingResampler | undefined;
  private readonly budget: PeerBudget;
  private gone = false;

  constructor(
    private readonly socket: WebSocket,
    private readonly log: Logger,
    private readonly events: ParticipantEvents,
    private readonly limits: ParticipantLimits = DEFAULT_PARTICIPANT_LIMITS,
    /** The room's clock: a microphone's audio is real time on it, and its rate is checked against it. */
    clock: Clock = REAL_CLOCK,
  ) {
    this.budget = new PeerBudget(limits, () => clock.now());
    socket.on('message', (data, isBinary) => this.onMessage(data, isBinary));
    socket.on('close', (code, reason) =>
      this.finish(`socket closed (${code}${reason.length ? ` ${reason.toString()}` : ''})`),
    );
    socket.on('error', (err) => {
      this.log.debug({ err }, 'room socket error');
      this.finish('socket error');
    });
  }

  get ready(): boolean {
    return this.playerRateHz > 0;
  }

  /** The room's mixer input for this participant's audio. */
  connectInput(input: RoomInput): void {
    this.input = input;
  }

  /** Sends an RTVI message (JSON text), framed for this client's wire. */
  send(message: string): void {
    if (this.writable()) this.socket.send((this.wire ?? jsonWire).encodeMessage(message));
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
    this.socket.send((this.wire ?? jsonWire).encodeAudio(pcm, this.playerRateHz));
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
      this.close(CLOSE.flood, 'client is not reading');
      return false;
    }
    return true;
  }

  private onMessage(data: RawData, isBinary: boolean): void {
    if (this.gone) return;
    this.stats.messagesIn += 1;
    const flood = this.budget.message();
    if (flood) {
      this.refuse(flood);
      return;
    }
    const bytes = Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data as ArrayBuffer);
    this.wire ??= wireOf(this.socket.protocol, isBinary);
    const frame = this.wire.decode(bytes, isBinary);
    switch (frame.kind) {
      case 'malformed':
        this.close(CLOSE.policyViolation, frame.reason);
        return;
      case 'refused':
        this.send(frame.reply);
        return;
      case 'message':
        this.onClientMessage(frame.message, this.wire);
        return;
      case 'audio':
        this.onAudio(frame.pcm, frame.sampleRateHz);
        return;
    }
  }

  private onClientMessage(message: ClientMessage, wire: RoomWire): void {
    switch (message.type) {
      case 'client-ready': {
        if (this.ready) {
          this.close(CLOSE.policyViolation, 'client-ready sent twice');
          return;
        }
        this.declaredRateHz = message.data.audio?.sampleRateHz;
        const playerRateHz = wire.playerRateHz ?? this.declaredRateHz;
        if (playerRateHz === undefined) {
          this.close(CLOSE.policyViolation, 'malformed message: client-ready must declare data.audio.sampleRateHz');
          return;
        }
        this.playerRateHz = playerRateHz;
        this.outResampler = new StreamingResampler(TELEPHONY_SAMPLE_RATE_HZ, this.playerRateHz);
        this.events.onReady(this);
        return;
      }
      case 'user-image':
        if (this.ready) this.events.onImage(message.data.imageBase64);
        return;
      case 'disconnect-bot':
        if (wire.disconnectBotEndsRoom) this.events.onDisconnectBot(this);
        else this.close(CLOSE.normal, 'participant left');
        return;
      case 'llm-function-call-result':
        if (this.ready) this.events.onFunctionCallResult(this, message);
        return;
    }
  }

  /** Microphone audio at `frameRateHz`, or at the rate declared in client-ready when the wire does not say. */
  private onAudio(pcm: Int16Array, frameRateHz: number | undefined): void {
    const rateHz = frameRateHz ?? this.declaredRateHz;
    if (!this.ready || rateHz === undefined) {
      this.close(CLOSE.policyViolation, 'audio before client-ready');
      return;
    }
    // A microphone cannot produce audio faster than time passes; a little burst is network jitter.
    const refusal = this.budget.audio((pcm.length / rateHz) * 1000);
    if (refusal) {
      this.refuse(refusal);
      return;
    }
    this.stats.audioIn += 1;
    // Pipecat frames declare their rate each time; a client that changes it gets a new resampler.
    if (this.inResampler?.inputRateHz !== rateHz)
      this.inResampler = new StreamingResampler(rateHz, TELEPHONY_SAMPLE_RATE_HZ);
    this.input?.push(this.inResampler.process(pcm));
  }

  private refuse(refusal: PeerRefusal): void {
    this.log.warn({ limits: this.limits, why: refusal.reason }, 'room client exceeds its budget; closing');
    this.close(refusal.kind === 'flood' ? CLOSE.flood : CLOSE.messageTooBig, refusal.reason);
  }

  private finish(reason: string): void {
    if (this.gone) return;
    this.gone = true;
    this.events.onGone(this, reason);
  }
}
