import { TokenBucket } from '../security/token-bucket.js';

/**
 * How much audio a caller may send us: a microphone or a carrier produces audio in real time, so
 * a peer sending much more is broken or hostile, and everything downstream (VAD, STT, recording)
 * does work in proportion to the audio it gets. Shared by every transport that takes a caller's
 * audio: the carrier's media stream and a browser in a room.
 */

/**
 * Longest audio one message may carry. Twilio sends 20 ms frames, browsers 20 ms or so; some
 * carriers and clients batch a few frames. 500 ms leaves that room and keeps the work one message
 * can cause small (16 VAD windows).
 */
export const MAX_AUDIO_MS_PER_MESSAGE = 500;

export interface AudioRateLimits {
  /**
   * Audio a peer may send per second of wall time, sustained, as a multiple of real time. A real
   * sender averages 1; 2 lets a sender catch up after a burst within as long again while still
   * sending live audio, and makes clock drift between its clock and ours irrelevant (with 1, even
   * 100 ppm of drift would use up the burst allowance over a long call). What 2 costs at worst is
   * a second call's worth of VAD and STT work.
   */
  sustainedRealTimeFactor: number;
  /**
   * Audio a peer may send ahead of that rate at once, ms. Carriers and networks deliver audio in
   * clumps: a TCP retransmission (200 ms, then 400, 800 …) holds frames back and releases them
   * together, and a client stalled by its own event loop sends its backlog at once. So does ours:
   * while this process's event loop is held (a loaded host, a long garbage collection) the
   * kernel keeps the caller's frames, and we read them in one lump when it runs again; the
   * budget must not blame the caller for that. 10 s absorbs such a stall and several
   * retransmission timeouts, and costs little: the work a clump causes is a few ms of VAD per
   * second of audio, and the sustained rate still bounds a peer's work over time.
   */
  burstMs: number;
}

export const DEFAULT_AUDIO_RATE_LIMITS: Readonly<AudioRateLimits> = Object.freeze({
  sustainedRealTimeFactor: 2,
  burstMs: 10_000,
});

/** `too-long`: one message over MAX_AUDIO_MS_PER_MESSAGE; `too-fast`: over the rate. */
export type AudioAdmission = 'ok' | 'too-long' | 'too-fast';

/** One caller's audio budget, in ms of audio. */
export class AudioRateLimiter {
  private readonly bucket: TokenBucket;

  constructor(limits: Readonly<AudioRateLimits> = DEFAULT_AUDIO_RATE_LIMITS, now?: () => number) {
    this.bucket = new TokenBucket(limits.burstMs, limits.sustainedRealTimeFactor * 1000, now);
  }

  /** Accounts for one message carrying `audioMs` of audio, and says whether it may be used. */
  admit(audioMs: number): AudioAdmission {
    if (audioMs > MAX_AUDIO_MS_PER_MESSAGE) return 'too-long';
    return this.bucket.take(audioMs) ? 'ok' : 'too-fast';
  }
}

/** What a peer may send: messages a second (with burst), and audio (see AudioRateLimits). */
export interface PeerLimits {
  maxMessagesPerSec: number;
  audio: Readonly<AudioRateLimits>;
}

/** Why a peer is closed: `flood` (too many messages, audio too fast) or `too-big` (one message's audio), and the close reason. */
export interface PeerRefusal {
  kind: 'flood' | 'too-big';
  reason: string;
}

/**
 * The flood counter of one inbound socket (a carrier's media stream, a browser in a room): every
 * message counts, and every message's audio counts against real time. Each transport closes a
 * refused peer with its own table's code for the kind.
 */
export class PeerBudget {
  private readonly messages: TokenBucket;
  private readonly audioBudget: AudioRateLimiter;

  constructor(
    readonly limits: Readonly<PeerLimits>,
    now?: () => number,
  ) {
    this.messages = new TokenBucket(limits.maxMessagesPerSec, limits.maxMessagesPerSec, now);
    this.audioBudget = new AudioRateLimiter(limits.audio, now);
  }

  /** One message arrived (of any kind, well-formed or not). */
  message(): PeerRefusal | undefined {
    if (this.messages.take()) return undefined;
    return { kind: 'flood', reason: `more than ${this.limits.maxMessagesPerSec} messages a second` };
  }

  /** A message carried `audioMs` of audio (counted whether or not it is used: the work of receiving it is done). */
  audio(audioMs: number): PeerRefusal | undefined {
    switch (this.audioBudget.admit(audioMs)) {
      case 'ok':
        return undefined;
      case 'too-long':
        return { kind: 'too-big', reason: `audio message over ${MAX_AUDIO_MS_PER_MESSAGE} ms` };
      case 'too-fast':
        return { kind: 'flood', reason: 'audio faster than real time' };
    }
  }
}
