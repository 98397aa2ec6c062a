import { SAMPLES_PER_FRAME_8K } from '../../audio/frames.js';
import { OpusDecoder8k } from '../../audio/opus.js';

/**
 * A browser's microphone as RTP Opus packets, in order, as 8 kHz PCM. UDP may reorder and lose
 * packets: a packet that arrives early is held until the ones before it come, for at most
 * `MAX_HELD_PACKETS` packets (so a reordering within that many frames costs nothing); beyond that
 * the missing packet counts as lost and its 20 ms become silence, which keeps the speech that
 * follows at its place in time for the VAD and the speech-to-text. A packet older than one already
 * played is dropped.
 */

/** Packets held while one before them is missing (3: 60 ms of reordering, as a 40 ms jitter causes). */
export const MAX_HELD_PACKETS = 3;
/** A jump of the sequence number by more than this is a new stream (the browser restarted its sender). */
const RESTART_GAP = 100;

export interface OpusReceiverStats {
  packets: number;
  lost: number;
  late: number;
  undecodable: number;
}

export class OpusReceiver {
  readonly stats: OpusReceiverStats = { packets: 0, lost: 0, late: 0, undecodable: 0 };
  private readonly decoder = new OpusDecoder8k();
  private readonly held = new Map<number, Uint8Array>();
  private expected: number | undefined;
  private readonly silence = new Int16Array(SAMPLES_PER_FRAME_8K);

  /** `onAudio` is lent each frame (and the silence of a lost one): copy what you keep. */
  constructor(private readonly onAudio: (pcm8k: Int16Array) => void) {}

  push(sequenceNumber: number, payload: Uint8Array): void {
    this.stats.packets += 1;
    if (this.expected === undefined) this.expected = sequenceNumber;
    const ahead = (((sequenceNumber - this.expected) & 0xffff) << 16) >> 16;
    if (ahead < 0) {
      this.stats.late += 1;
      return;
    }
    if (ahead > RESTART_GAP) {
      this.held.clear();
      this.expected = sequenceNumber;
    }
    // The payload's buffer belongs to the packet parser: keep a copy only when it must wait.
    if (sequenceNumber !== this.expected) this.held.set(sequenceNumber, Uint8Array.from(payload));
    else this.play(payload);
    this.release();
  }

  free(): void {
    this.held.clear();
    this.decoder.free();
  }

  private release(): void {
    for (;;) {
      const next = this.held.get(this.expected!);
      if (next) {
        this.held.delete(this.expected!);
        this.play(next);
      } else if (this.held.size > MAX_HELD_PACKETS) {
        this.stats.lost += 1;
        this.advance();
        this.onAudio(this.silence);
      } else {
        return;
      }
    }
  }

  private play(payload: Uint8Array): void {
    this.advance();
    const pcm = this.decoder.decode(payload);
    if (pcm === undefined) {
      this.stats.undecodable += 1;
      this.onAudio(this.silence);
    } else {
      this.onAudio(pcm);
    }
  }

  private advance(): void {
    this.expected = (this.expected! + 1) & 0xffff;
  }
}
