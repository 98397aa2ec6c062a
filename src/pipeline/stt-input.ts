import type { AudioConverter } from '../audio/format-converter.js';
import type { SttStream } from '../providers/types.js';

/** Where a Finalize was asked for among the held frames. */
const FINALIZE = Symbol('finalize');
/** 8 kHz mu-law: one byte a sample. */
const MULAW_BYTES_PER_MS = 8;

/**
 * The caller's audio and the turn's Finalize requests on their way to the STT, in the order they
 * happened. The STT socket opens with the call, but a caller who speaks at once ("Hello?") may
 * finish before its handshake does: until the stream is open, frames are held (up to a limit;
 * older ones are kept, the start of what the caller said matters most) and so is any Finalize,
 * in its place after the audio that preceded it. Released, that Finalize goes out right after that
 * audio and before the frames of anything said later, so the first turn ends on the VAD's stop
 * like every other turn instead of waiting for the vendor's own end-of-speech.
 *
 * This is the one place that holds input for a stream not yet open: an STT adapter hands out its
 * stream only once it can send.
 */
export class SttInput {
  private stream: SttStream | undefined;
  private converter: AudioConverter | undefined;
  private held: Array<Uint8Array | typeof FINALIZE> = [];
  private heldFrames = 0;
  /** Caller audio dropped while held (the limit was reached), ms: the stream's clock runs behind the call's by this much. */
  private droppedMs = 0;
  /** The stream failed for good or the call ended: input goes nowhere. */
  private gone = false;

  constructor(private readonly maxHeldFrames: number) {}

  /** One caller frame (8 kHz mu-law), lent for the duration of the call. */
  write(mulaw: Uint8Array): void {
    if (this.gone) return;
    if (this.stream && this.converter) {
      // Lent on: the stream copies what it keeps (SttStream.write).
      this.stream.write(this.converter.convert(mulaw));
      return;
    }
    if (this.heldFrames >= this.maxHeldFrames) {
      this.droppedMs += mulaw.length / MULAW_BYTES_PER_MS;
      return;
    }
    // A copy: a Buffer's slice() is a view that would keep the carrier's 8 KB pool chunk alive.
    this.held.push(new Uint8Array(mulaw));
    this.heldFrames += 1;
  }

  /**
   * A time on the stream's clock (ms of the audio it was given, as in an STT final's coveredToMs)
   * on the call's clock (ms of caller audio since the call's first frame, as the VAD counts).
   */
  callMs(streamMs: number): number {
    return streamMs + this.droppedMs;
  }

  /** The caller's turn ended (VAD stop): the STT is to return its final results for what it heard. */
  finalize(): void {
    if (this.gone) return;
    if (this.stream) {
      this.stream.finalize();
      return;
    }
    // Twice in a row with no audio between asks nothing more than once.
    if (this.held.at(-1) !== FINALIZE) this.held.push(FINALIZE);
  }

  /** The stream is open: what was held goes to it in order, then input flows straight through. */
  open(stream: SttStream, converter: AudioConverter): void {
    if (this.gone) return;
    const held = this.held;
    this.held = [];
    this.heldFrames = 0;
    for (const item of held) {
      if (item === FINALIZE) stream.finalize();
      else stream.write(converter.convert(item));
    }
    this.stream = stream;
    this.converter = converter;
  }

  /** Stops all input (the stream failed for good, or the call ended); returns the stream to close, if one was open. */
  stop(): SttStream | undefined {
    const stream = this.stream;
    this.gone = true;
    this.stream = undefined;
    this.held = [];
    this.heldFrames = 0;
    return stream;
  }
}
