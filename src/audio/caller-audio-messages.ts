import { ByteLog } from './byte-log.js';
import { TELEPHONY_SAMPLE_RATE_HZ, VENDOR_AUDIO_MESSAGE_MULAW_BYTES } from './frames.js';
import { mulawSumOfSquares } from './mulaw.js';

/**
 * The caller's 8 kHz mu-law frames on their way to a vendor's websocket (speech-to-text,
 * speech-to-speech), cut into messages by the caller's level. Every message costs a websocket
 * frame and a write system call on the main thread, so frames wait to go several at a time,
 * except where the vendor may be deciding something on them:
 *
 * - speech goes in pairs, 40 ms messages (VENDOR_AUDIO_MESSAGE_MS says why);
 * - the quiet just after speech (EDGE_QUIET_FRAMES, 1.2 s) goes in pairs too: the vendor ends the
 *   caller's utterance on it (its endpointing, its silence_duration_ms);
 * - the rest of the quiet (a caller listening to the bot: most of a call) goes in
 *   QUIET_MESSAGE_MS messages, or SILENT_MESSAGE_MS while it stays under SILENT_MEAN_SQUARE (a
 *   line's hiss, digital silence). Nothing the vendor decides waits on it: the first frame of
 *   speech fills a pair at once with the quiet waiting before it, so speech is never held back by
 *   it, and a quiet frame above that floor sends at once what has waited QUIET_MESSAGE_MS.
 *
 * With `edgesAtOnce` (the speech-to-speech vendors, whose own VAD cuts the bot and ends the
 * caller's turn), the frames at those edges go at once, on their own or with the ones waiting:
 * the first EDGE_SPEECH_FRAMES of speech after a pause and the first EDGE_QUIET_FRAMES of quiet
 * after speech (or the quiet until the vendor says it ended the utterance, if it says so sooner:
 * vendorEndedSpeech), so neither decision waits 20 ms for a pair. The middle of speech goes in
 * QUIET_MESSAGE_MS messages: no decision of the vendor's waits on it (its onset has gone, and its
 * end goes with the first quiet frame).
 */
export class CallerAudioMessages {
  /** Frames of speech since the current utterance began, and of quiet since the last speech. */
  private speechFrames = 0;
  private quietFrames = Number.POSITIVE_INFINITY;
  /**
   * The frames waiting, copied into a log of this object's own: a frame is lent only for the call
   * that hands it over. (A Buffer's `slice()` is a view, not a copy: it kept the carrier's frame,
   * and the 8 KB of Node's shared pool it sits in, for the 100 ms a quiet message waits.) No
   * allocation per frame or per message; `send` gets a view that the next frame overwrites.
   */
  private readonly waiting = new ByteLog(SILENT_MESSAGE_MULAW_BYTES);

  /** @param send takes a message's audio for the duration of the call (it must not keep it). */
  constructor(
    private readonly send: (mulaw: Uint8Array) => void,
    private readonly edgesAtOnce: boolean,
  ) {}

  get waitingBytes(): number {
    return this.waiting.length;
  }

  /** One caller frame (any length; normally 20 ms). */
  push(mulaw: Uint8Array): void {
    if (mulaw.length === 0) return;
    const limit = this.messageBytes(mulaw);
    if (this.waiting.length === 0 && mulaw.length >= limit) {
      this.send(mulaw);
      return;
    }
    this.waiting.append(mulaw);
    if (this.waiting.length >= limit) this.drain();
  }

  /** Sends what is waiting now (before a Finalize, or when nothing was sent for a while). */
  drain(): void {
    if (this.waiting.length === 0) return;
    const message = this.waiting.view();
    this.reset();
    this.send(message);
  }

  /**
   * The vendor has ended the caller's utterance (OpenAI's `speech_stopped`): the quiet after it
   * decides nothing more, so it goes in QUIET_MESSAGE_MS messages at once rather than at the end
   * of EDGE_QUIET_FRAMES, and the caller's next speech is a new onset (its first frames at once).
   * Taken only once the quiet has lasted ONSET_AFTER_QUIET_FRAMES: the event names no frame of
   * ours, and one that arrives late, in a short pause of the caller's next utterance, must not
   * cut that utterance's edge (ignored, the edge runs its whole length, as without the event).
   */
  vendorEndedSpeech(): void {
    if (this.quietFrames >= ONSET_AFTER_QUIET_FRAMES) this.quietFrames = Math.max(this.quietFrames, EDGE_QUIET_FRAMES);
  }

  /** Forgets what is waiting (the socket it was for is gone). */
  reset(): void {
    this.waiting.clear();
  }

  /** How many bytes may wait, this frame included, before they go (see the class comment). */
  private messageBytes(mulaw: Uint8Array): number {
    const meanSquare = mulawSumOfSquares(mulaw) / mulaw.length;
    if (meanSquare >= SPEECH_MEAN_SQUARE) {
      if (this.quietFrames >= ONSET_AFTER_QUIET_FRAMES) this.speechFrames = 0;
      this.speechFrames += 1;
      this.quietFrames = 0;
      if (!this.edgesAtOnce) return VENDOR_AUDIO_MESSAGE_MULAW_BYTES;
      return this.speechFrames <= EDGE_SPEECH_FRAMES ? 0 : QUIET_MESSAGE_MULAW_BYTES;
    }
    this.quietFrames += 1;
    if (this.speechFrames > 0 && this.quietFrames <= EDGE_QUIET_FRAMES)
      return this.edgesAtOnce ? 0 : VENDOR_AUDIO_MESSAGE_MULAW_BYTES;
    return meanSquare < SILENT_MEAN_SQUARE ? SILENT_MESSAGE_MULAW_BYTES : QUIET_MESSAGE_MULAW_BYTES;
  }
}

/** Frames of 20 ms: 300 ms of speech after a pause, 1.2 s of quiet after speech. */
const EDGE_SPEECH_FRAMES = 15;
const EDGE_QUIET_FRAMES = 60;
/** A pause this long makes the next speech a new onset to the vendor's VAD (less than its 500 ms default). */
const ONSET_AFTER_QUIET_FRAMES = 15;
/** Mean square of a frame's samples at or above which it counts as speech: RMS 150, about -47 dBFS. */
const SPEECH_MEAN_SQUARE = 150 * 150;
/**
 * Quiet past the edges goes in messages this long: 100 ms, two fifths of the messages of pairs.
 * Speech a vendor would hear below SPEECH_MEAN_SQUARE could reach it up to 80 ms later than in
 * pairs; no louder speech does.
 */
export const QUIET_MESSAGE_MS = 100;
const QUIET_MESSAGE_MULAW_BYTES = (TELEPHONY_SAMPLE_RATE_HZ * QUIET_MESSAGE_MS) / 1000;
/**
 * Mean square under which a quiet frame is silence: RMS 32, about -60 dBFS, where a quiet line's
 * hiss sits (digital silence is 0); speech on a phone line is some 35 dB above it.
 */
const SILENT_MEAN_SQUARE = 32 * 32;
/**
 * Silence (under SILENT_MEAN_SQUARE) goes in messages this long: a caller listening to the bot
 * on a quiet line costs five messages a second, not ten. Audio above that floor still waits at
 * most QUIET_MESSAGE_MS: its first frame sends what waits once that much has.
 */
export const SILENT_MESSAGE_MS = 200;
const SILENT_MESSAGE_MULAW_BYTES = (TELEPHONY_SAMPLE_RATE_HZ * SILENT_MESSAGE_MS) / 1000;
