import type { PlayoutPacing, PlayoutSink } from './playout.js';

/**
 * Where a call's audio comes from and goes to: a carrier's media stream, or a room. The call
 * session speaks only this; each transport turns it into its own wire protocol.
 *
 * Frame ownership, both ways: a frame handed across this interface (`onAudio` in, `sendMedia`
 * out) is lent for the duration of that call only. The giver may reuse the buffer as soon as the
 * call returns, so whoever keeps a frame longer (held frames, a recorder, an STT replay buffer)
 * copies it. Transports and Playout then never allocate per frame just in case.
 */
export interface CallTransport extends PlayoutSink {
  /** The carrier's id for the call, when there is one (hang-up over REST uses it). */
  readonly callSid: string | undefined;
  /** Counters for the call's summary log line. */
  readonly stats: Readonly<Record<string, number>>;
  /** Ends the leg from our side; `code` is a websocket close code. */
  close(code?: number, reason?: string): void;
  /**
   * How the call's Playout paces audio to this leg: CLEARABLE_PACING for a far end that drops
   * what it holds on `clear`; CALL_PACING when unset.
   */
  readonly pacing?: PlayoutPacing;
}

/** How a call starts: identifiers for logs and the carrier, and the custom parameters it carried. */
export interface CallStart {
  callSid: string;
  streamSid: string;
  customParameters?: Record<string, string>;
}

/** What a call gets from its transport, in order. */
export interface CallTransportHandler {
  onStart(start: CallStart): void;
  /** mu-law 8 kHz, 20 ms (160 bytes) per frame; lent until this returns (see CallTransport). */
  /**
   * @param streamTimestampMs when the caller spoke the frame, in ms since their stream started,
   *   when the transport carries it (a carrier's media timestamp): set-up and stalls on this side
   *   delay when a frame is read, not when it was spoken.
   */
  onAudio(mulaw: Uint8Array, streamTimestampMs?: number): void;
  onDtmf(digit: string): void;
  onMark(name: string): void;
  /** The far end left (hang-up), or the connection closed. Called once. */
  onEnd(reason: string): void;
}
