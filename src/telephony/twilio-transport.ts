import type { Duplex } from 'node:stream';
import { type Clock, REAL_CLOCK } from '../shared/clock.js';
import type { Logger } from 'pino';
import type { RawData, WebSocket } from 'ws';
import {
  type AudioRateLimits,
  DEFAULT_AUDIO_RATE_LIMITS,
  MAX_AUDIO_MS_PER_MESSAGE,
  PeerBudget,
  type PeerRefusal,
} from '../audio/audio-rate-limit.js';
import { ByteLog } from '../audio/byte-log.js';
import { FRAME_MS, MULAW_FRAME_BYTES } from '../audio/frames.js';
import type { CallTransport, CallTransportHandler } from '../pipeline/call-transport.js';
import { CLEARABLE_PACING } from '../pipeline/playout.js';
import {
  INBOUND_EVENTS,
  type InboundMessage,
  inboundMessage,
  outboundClear,
  isWellFormedMark,
  isWellFormedMedia,
  MAX_MEDIA_PAYLOAD_CHARS,
  OUTBOUND_MEDIA_SUFFIX,
  outboundMark,
  outboundMediaPrefix,
} from './twilio-messages.js';
import { decodesWhole, emptyScannedMedia, type ScannedMedia, scanMediaMessage } from './media-message-scan.js';
import { CLOSE } from '../shared/close-codes.js';

export interface TransportLimits {
  /** Messages per second a carrier may sustain (it sends 50 media frames a second), and burst. */
  maxMessagesPerSec: number;
  /** How much caller audio the carrier may send, per message and per second. */
  audio: Readonly<AudioRateLimits>;
  /** Malformed messages tolerated before the stream is closed. */
  maxMalformed: number;
  /** Messages held while the call is being set up. */
  maxEarlyMessages: number;
  /** Outbound bytes queued in the socket beyond which the peer is considered dead. */
  maxBufferedBytes: number;
}

export const DEFAULT_TRANSPORT_LIMITS: TransportLimits = {
  maxMessagesPerSec: 250,
  audio: DEFAULT_AUDIO_RATE_LIMITS,
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
  /**
   * When the carrier opened the stream, on the call's clock: the call's audio starts here, though
   * the messages that came while the call was set up are only delivered on `attach`.
   */
  readonly openedAtMs: number;
  /** Counted for the call's summary. */
  readonly stats = { messagesIn: 0, mediaIn: 0, malformed: 0, ignored: 0, mediaOut: 0, marksOut: 0, clearsOut: 0 };
  /** The carrier drops the audio it holds on `clear`: the call's audio may go further ahead, in bigger writes. */
  readonly pacing = CLEARABLE_PACING;

  private handler: CallTransportHandler | undefined;
  private early: InboundMessage[] = [];
  private ended = false;
  private endReason = '';
  private readonly budget: PeerBudget;
  private mediaPrefixSid: string | undefined;
  private mediaPrefix = '';
  /** This tick's messages are held until it ends (see holdForTick()). */
  private held = false;
  /**
   * Audio of the frames sent this tick, not yet written (see holdForTick()): copied, since a frame
   * is only lent for the call that hands it over (call-transport.ts). The buffer is the call's.
   */
  private readonly pendingMedia = new ByteLog(PENDING_MEDIA_BYTES);
  /**
   * The caller's frame, decoded from base64 into the same bytes every time and lent to the handler
   * (CallTransportHandler.onAudio): no Buffer per frame. Its own memory, not a slice of Node's
   * shared pool, since it lives as long as the call. `inboundFrame` is the view last lent.
   */
  private inbound = Buffer.allocUnsafeSlow(MULAW_FRAME_BYTES);
  private inboundFrame = this.inbound;
  /** Where the last media message read without JSON.parse kept its values (media-message-scan.ts). */
  private readonly scanned: ScannedMedia = emptyScannedMedia();
  private readonly endListeners: Array<() => void> = [];

  /**
   * @param tcp the connection under `socket` (the upgraded request's socket), corked per tick so a
   *   tick's messages leave in one write; without it every message is its own write (a tick's
   *   frames are one message either way).
   */
  constructor(
    private readonly socket: WebSocket,
    private readonly log: Logger,
    private readonly limits: TransportLimits = DEFAULT_TRANSPORT_LIMITS,
    private readonly tcp?: Pick<Duplex, 'cork' | 'uncork'>,
    /** The calls' clock: the carrier's audio is real time on it, and its rate is checked against it. */
    clock: Clock = REAL_CLOCK,
  ) {
    this.openedAtMs = clock.now();
    this.budget = new PeerBudget(limits, () => clock.now());
    socket.on('message', (data, isBinary) => this.onMessage(data, isBinary));
    socket.on('close', (code, reason) =>
      this.finish(`socket closed (${code}${reason.length ? ` ${reason.toString()}` : ''})`),
    );
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
    this.pendingMedia.append(frame);
    this.holdForTick();
  }

  sendMark(name: string): void {
    if (!this.writable() || !this.streamSid) return;
    this.stats.marksOut += 1;
    this.flushMedia();
    this.holdForTick();
    this.socket.send(outboundMark(this.streamSid, name));
  }

  /**
   * Holds this tick's messages and writes them when the tick ends: the frames sent in a row go
   * out as one `media` message (Twilio plays a payload of any length; Playout sends a call's frames
   * two at a time, playout.ts), and with the TCP socket, the tick's messages leave in one system
   * call. A message per frame and a write per message were the largest share of a talking call's
   * CPU (docs/cost-per-call.md). Order is kept: a mark or a clear first sends the frames before it.
   */
  private holdForTick(): void {
    if (this.held) return;
    this.held = true;
    this.tcp?.cork();
    process.nextTick(() => {
      this.held = false;
      this.flushMedia();
      this.tcp?.uncork();
    });
  }

  /** The frames held this tick, as one media message. */
  private flushMedia(): void {
    if (this.pendingMedia.length === 0) return;
    const audio = this.pendingMedia.view();
    // The bytes stay as they are until the next append, which comes after this returns.
    this.pendingMedia.clear();
    if (this.socket.readyState !== this.socket.OPEN || !this.streamSid) return;
    // The JSON around the payload is built once per stream.
    if (this.mediaPrefixSid !== this.streamSid) {
      this.mediaPrefixSid = this.streamSid;
      this.mediaPrefix = outboundMediaPrefix(this.streamSid);
    }
    this.socket.send(this.mediaPrefix + audio.toString('base64') + OUTBOUND_MEDIA_SUFFIX);
  }

  sendClear(): void {
    if (!this.writable() || !this.streamSid) return;
    this.stats.clearsOut += 1;
    // Frames held this tick would be cleared at once by the carrier: they are not sent at all.
    this.pendingMedia.clear();
    this.socket.send(outboundClear(this.streamSid));
  }

  /** Ends the stream from our side; with nothing after <Connect> in the TwiML, the call ends. */
  close(code: number = CLOSE.normal, reason = 'call ended'): void {
    this.flushMedia();
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
    const flood = this.budget.message();
    if (flood) {
      this.refuse(flood);
      return;
    }
    if (isBinary) {
      this.close(CLOSE.unsupportedData, 'binary frames are not part of the protocol');
      return;
    }
    // A media message in the carrier's usual shape is read from its bytes; anything else, or a
    // message before the handler is attached (kept as parsed), takes the general path below.
    if (this.handler && Buffer.isBuffer(data) && scanMediaMessage(data, this.scanned)) {
      if (this.onScannedMedia(data, this.scanned)) return;
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
    const payload = (json as { media?: { payload?: unknown } | null } | null)?.media?.payload;
    if (event === 'media' && typeof payload === 'string' && payload.length > MAX_MEDIA_PAYLOAD_CHARS) {
      this.log.warn({ payloadChars: payload.length }, 'media message too large; closing');
      this.close(CLOSE.messageTooBig, `media payload over ${MAX_AUDIO_MS_PER_MESSAGE} ms of audio`);
      return;
    }
    // Media (50 messages a second per call) and marks (10) are checked by hand; anything else, or
    // one that fails the check, goes through the schema (which also words the error).
    if (event === 'media' && isWellFormedMedia(json)) {
      if (this.admitAudio(json.media.payload)) this.deliver(json);
      return;
    }
    if (event === 'mark' && isWellFormedMark(json)) {
      this.deliver(json);
      return;
    }
    const parsed = inboundMessage.safeParse(json);
    if (!parsed.success) {
      this.malformed(parsed.error.issues[0]?.message ?? 'invalid');
      return;
    }
    this.deliver(parsed.data);
  }

  /** To the handler, or kept (up to maxEarlyMessages) until one is attached. */
  private deliver(message: InboundMessage): void {
    if (this.handler) this.dispatch(message);
    else if (this.early.length < this.limits.maxEarlyMessages) this.early.push(message);
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
        const timestamp = message.media.timestamp;
        this.onMedia(
          message.streamSid === undefined || message.streamSid === this.streamSid,
          message.media.track === undefined || message.media.track === 'inbound',
          this.decodeFrame(message.media.payload),
          timestamp === undefined ? Number.NaN : Number(timestamp),
        );
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

  /** A media message as the scan found it: the checks and the budget of onMessage, then onMedia. */
  private onScannedMedia(data: Buffer, found: ScannedMedia): boolean {
    const payload = data.toString('latin1', found.payloadStart, found.payloadEnd);
    const frame = this.decodeFrame(payload);
    // Only a payload of base64 decodes whole: anything else is the general path's (see readPayload).
    if (!decodesWhole(payload, frame.length)) return false;
    if (!this.admitAudio(payload)) return true;
    this.onMedia(
      found.streamSidStart < 0 || spells(data, found.streamSidStart, found.streamSidEnd, this.streamSid),
      found.trackStart < 0 || spells(data, found.trackStart, found.trackEnd, 'inbound'),
      frame,
      found.timestampStart < 0 ? Number.NaN : numberAt(data, found.timestampStart, found.timestampEnd),
    );
    return true;
  }

  /**
   * A caller's frame (decoded, lent) to the handler, if it is for this stream (`sameStream`: the
   * message's streamSid is this one's or absent) and on the inbound track (or no track named);
   * `timestampMs` NaN when the message had none, or none that is a number.
   */
  private onMedia(sameStream: boolean, inbound: boolean, frame: Buffer, timestampMs: number): void {
    if (!this.streamSid || !sameStream) {
      this.stats.ignored += 1;
      return;
    }
    if (!inbound) return;
    this.stats.mediaIn += 1;
    this.handler!.onAudio(frame, Number.isFinite(timestampMs) ? timestampMs : undefined);
  }

  /** The payload's bytes, in `inbound` (grown if a carrier sends longer frames), lent until the next frame. */
  private decodeFrame(payloadBase64: string): Buffer {
    // An upper bound whatever the padding or stray characters: 3 bytes for every 4 characters.
    const maxBytes = Math.ceil((payloadBase64.length * 3) / 4);
    if (this.inbound.length < maxBytes) this.inbound = Buffer.allocUnsafeSlow(maxBytes);
    // Decodes as Buffer.from does (characters outside base64 are skipped), so it may write fewer.
    const bytes = this.inbound.write(payloadBase64, 'base64');
    if (this.inboundFrame.buffer !== this.inbound.buffer || this.inboundFrame.length !== bytes)
      this.inboundFrame = this.inbound.subarray(0, bytes);
    return this.inboundFrame;
  }

  private malformed(why: string): void {
    this.stats.malformed += 1;
    this.log.debug({ why }, 'malformed media stream message');
    if (this.stats.malformed > this.limits.maxMalformed)
      this.close(CLOSE.policyViolation, 'too many malformed messages');
  }

  /**
   * Every media payload counts against the call's audio budget (delivered or not: the work of
   * receiving it is done), so a carrier leg can never feed the call faster than about real time.
   */
  private admitAudio(payloadBase64: string): boolean {
    // 8 kHz mu-law: 8 bytes a ms. The payload's length was checked against MAX_MEDIA_PAYLOAD_CHARS,
    // this stream's per-message limit (an unpadded payload at it decodes to 2 bytes over 500 ms).
    const audioMs = Math.min(base64DecodedBytes(payloadBase64) / 8, MAX_AUDIO_MS_PER_MESSAGE);
    const refusal = this.budget.audio(audioMs);
    if (refusal) this.refuse(refusal);
    return refusal === undefined;
  }

  private refuse(refusal: PeerRefusal): void {
    this.log.warn({ limits: this.limits, why: refusal.reason }, 'carrier exceeds its budget; closing the stream');
    this.close(refusal.kind === 'flood' ? CLOSE.flood : CLOSE.messageTooBig, refusal.reason);
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

/**
 * Frames held in a tick: a call's Playout sends five (CLEARABLE_PACING), and a run's first burst
 * the whole lead; more only after a stall.
 */
const PENDING_MEDIA_BYTES = (CLEARABLE_PACING.leadMs / FRAME_MS) * MULAW_FRAME_BYTES;

/** Whether bytes [start, end) of `data` (ASCII, as the scan guarantees) spell `text`. */
function spells(data: Buffer, start: number, end: number, text: string | undefined): boolean {
  if (text === undefined || end - start !== text.length) return false;
  for (let i = 0; i < text.length; i++) if (data[start + i] !== text.charCodeAt(i)) return false;
  return true;
}

/**
 * Number() of the ASCII bytes [start, end) of `data`, without making them a string when they are
 * plain digits (a carrier's timestamp, on every frame); anything else goes through Number().
 */
function numberAt(data: Buffer, start: number, end: number): number {
  if (end === start || end - start > 15) return Number(data.toString('latin1', start, end));
  let value = 0;
  for (let i = start; i < end; i++) {
    const digit = data[i]! - 0x30;
    if (digit < 0 || digit > 9) return Number(data.toString('latin1', start, end));
    value = value * 10 + digit;
  }
  return value;
}

/** Bytes a base64 string decodes to (3 for every 4 characters, less the padding). */
function base64DecodedBytes(base64: string): number {
  const padding = base64.endsWith('==') ? 2 : base64.endsWith('=') ? 1 : 0;
  return Math.floor((base64.length * 3) / 4) - padding;
}
