import type { Logger } from 'pino';
import type { RawData, WebSocket } from 'ws';
import type { CallTransport, CallTransportHandler } from '../pipeline/call-transport.js';
import {
  CLOSE,
  INBOUND_EVENTS,
  type InboundMessage,
  inboundMessage,
  outboundClear,
  isWellFormedMedia,
  OUTBOUND_MEDIA_SUFFIX,
  outboundMark,
  outboundMediaPrefix,
} from './twilio-messages.js';

export interface TransportLimits {
  /** Messages per second a carrier may sustain (it sends 50 media frames a second). */
  maxMessagesPerSec: number;
  /** Malformed messages tolerated before the stream is closed. */
  maxMalformed: number;
  /** Messages held while the call is being set up. */
  maxEarlyMessages: number;
  /** Outbound bytes queued in the socket beyond which the peer is considered dead. */
  maxBufferedBytes: number;
}

export const DEFAULT_TRANSPORT_LIMITS: TransportLimits = {
  maxMessagesPerSec: 250,
  maxMalformed: 20,
  maxEarlyMessages: 500,
  maxBufferedBytes: 4 * 1024 * 1024,
};

/**
 * One carrier leg speaking Twilio Media Streams. Listeners are attached in the constructor,
 * before anything awaits, so no early message is lost; messages are held until a handler is
 * attached (the call's configuration is loaded meanwhile).
 */
export class TwilioTransport implements CallTransport {
  streamSid: string | undefined;
  callSid: string | undefined;
  /** Counted for the call's summary. */
  readonly stats = { messagesIn: 0, mediaIn: 0, malformed: 0, ignored: 0, mediaOut: 0, marksOut: 0, clearsOut: 0 };

  private handler: CallTransportHandler | undefined;
  private early: InboundMessage[] = [];
  private ended = false;
  private endReason = '';
  private windowStartMs = 0;
  private windowCount = 0;
  private mediaPrefixSid: string | undefined;
  private mediaPrefix = '';
  private readonly endListeners: Array<() => void> = [];

  constructor(
    private readonly socket: WebSocket,
    private readonly log: Logger,
    private readonly limits: TransportLimits = DEFAULT_TRANSPORT_LIMITS,
  ) {
    socket.on('message', (data, isBinary) => this.onMessage(data, isBinary));
    socket.on('close', (code, reason) => this.finish(`socket closed (${code}${reason.length ? ` ${reason.toString()}` : ''})`));
    socket.on('error', (err) => {
      this.log.warn({ err }, 'media socket error');
      this.finish('socket error');
    });
  }

  /** Starts delivering messages (first the ones that arrived during set-up). */
  attach(handler: CallTransportHandler): void {
    this.handler = handler;
    const early = this.early;
    this.early = [];
    for (const message of early) this.dispatch(message);
    if (this.ended) handler.onEnd(this.endReason);
  }

  /** Runs `listener` once the leg has ended (at once if it already has), after the handler's onEnd. */
  whenEnded(listener: () => void): void {
    if (this.ended) listener();
    else this.endListeners.push(listener);
  }

  sendMedia(frame: Uint8Array): void {
    if (!this.writable() || !this.streamSid) return;
    this.stats.mediaOut += 1;
    // 50 frames a second per call: the JSON around the payload is built once per stream.
    if (this.mediaPrefixSid !== this.streamSid) {
      this.mediaPrefixSid = this.streamSid;
      this.mediaPrefix = outboundMediaPrefix(this.streamSid);
    }
    const payload = Buffer.from(frame.buffer, frame.byteOffset, frame.byteLength).toString('base64');
    this.socket.send(this.mediaPrefix + payload + OUTBOUND_MEDIA_SUFFIX);
  }

  sendMark(name: string): void {
    if (!this.writable() || !this.streamSid) return;
    this.stats.marksOut += 1;
    this.socket.send(outboundMark(this.streamSid, name));
  }

  sendClear(): void {
    if (!this.writable() || !this.streamSid) return;
    this.stats.clearsOut += 1;
    this.socket.send(outboundClear(this.streamSid));
  }

  /** Ends the stream from our side; with nothing after <Connect> in the TwiML, the call ends. */
  close(code: number = CLOSE.normal, reason = 'call ended'): void {
    if (this.socket.readyState === this.socket.OPEN || this.socket.readyState === this.socket.CONNECTING) {
      this.socket.close(code, reason.slice(0, 120));
    }
    this.finish(reason);
  }

  private writable(): boolean {
    if (this.socket.readyState !== this.socket.OPEN) return false;
    if (this.socket.bufferedAmount > this.limits.maxBufferedBytes) {
      this.log.warn({ bufferedBytes: this.socket.bufferedAmount }, 'carrier is not reading; closing the stream');
      this.close(CLOSE.policyViolation, 'peer not reading');
      return false;
    }
    return true;
  }

  private onMessage(data: RawData, isBinary: boolean): void {
    if (this.ended) return;
    this.stats.messagesIn += 1;
    if (this.flooded()) {
      this.log.warn({ limitPerSec: this.limits.maxMessagesPerSec }, 'media stream flood; closing');
      this.close(CLOSE.flood, 'too many messages');
      return;
    }
    if (isBinary) {
      this.close(CLOSE.unsupportedData, 'binary frames are not part of the protocol');
      return;
    }
    let json: unknown;
    try {
      json = JSON.parse(data.toString());
    } catch {
      this.malformed('not JSON');
      return;
    }
    const event = (json as { event?: unknown } | null)?.event;
    if (typeof event === 'string' && !INBOUND_EVENTS.has(event)) {
      this.stats.ignored += 1;
      this.log.debug({ event: event.slice(0, 40) }, 'unknown media stream event ignored');
      return;
    }
    // Media is 50 messages a second per call: checked by hand; anything else, or a media message
    // that fails the check, goes through the schema (which also words the error).
    if (event === 'media' && isWellFormedMedia(json)) {
      if (this.handler) this.dispatch(json);
      else if (this.early.length < this.limits.maxEarlyMessages) this.early.push(json);
      return;
    }
    const parsed = inboundMessage.safeParse(json);
    if (!parsed.success) {
      this.malformed(parsed.error.issues[0]?.message ?? 'invalid');
      return;
    }
    if (this.handler) this.dispatch(parsed.data);
    else if (this.early.length < this.limits.maxEarlyMessages) this.early.push(parsed.data);
  }

  private dispatch(message: InboundMessage): void {
    const handler = this.handler!;
    switch (message.event) {
      case 'connected':
        return;
      case 'start':
        if (this.streamSid) {
          this.stats.ignored += 1;
          return;
        }
        this.streamSid = message.start.streamSid;
        this.callSid = message.start.callSid;
        handler.onStart(message.start);
        return;
      case 'media': {
        if (!this.streamSid || (message.streamSid !== undefined && message.streamSid !== this.streamSid)) {
          this.stats.ignored += 1;
          return;
        }
        if (message.media.track !== undefined && message.media.track !== 'inbound') return;
        this.stats.mediaIn += 1;
        handler.onAudio(Buffer.from(message.media.payload, 'base64'));
        return;
      }
      case 'dtmf':
        if (this.streamSid) handler.onDtmf(message.dtmf.digit);
        return;
      case 'mark':
        handler.onMark(message.mark.name);
        return;
      case 'stop':
        this.close(CLOSE.normal, 'carrier stopped the stream');
        return;
    }
  }

  private malformed(why: string): void {
    this.stats.malformed += 1;
    this.log.debug({ why }, 'malformed media stream message');
    if (this.stats.malformed > this.limits.maxMalformed) this.close(CLOSE.policyViolation, 'too many malformed messages');
  }

  /** A one-second window counter: cheap, and a carrier never comes near the limit. */
  private flooded(): boolean {
    const now = performance.now();
    if (now - this.windowStartMs >= 1000) {
      this.windowStartMs = now;
      this.windowCount = 0;
    }
    this.windowCount += 1;
    return this.windowCount > this.limits.maxMessagesPerSec;
  }

  private finish(reason: string): void {
    if (this.ended) return;
    this.ended = true;
    this.endReason = reason;
    try {
      this.handler?.onEnd(reason);
    } finally {
      for (const listener of this.endListeners.splice(0)) listener();
    }
  }
}
