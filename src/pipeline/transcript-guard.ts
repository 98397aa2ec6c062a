/**
 * Bounds on what the STT may make a turn of. Words without speech from our VAD are accepted on
 * purpose (a quiet caller the VAD missed), so the VAD cannot vouch for a transcript; the audio
 * can: a transcript longer than the caller's audio since the last turn could hold, at any
 * speaking rate, is a provider fault (a runaway or corrupted stream), not speech. Such a
 * transcript is dropped, counted, and logged once per call; the call goes on.
 *
 * And whatever the STT sends, the text one turn hands the LLM is capped (MAX_TURN_TEXT_CHARS).
 */

/**
 * Characters of transcript one second of caller audio may hold: fast speech is about 15 (three
 * words a second of five letters and a space); this leaves more than twice that for vendors
 * that spell out numbers, punctuation and the like.
 */
export const MAX_TRANSCRIPT_CHARS_PER_SEC = 40;
/** Characters allowed whatever the audio (a short "yes" finalised a moment after the turn began). */
export const TRANSCRIPT_SLACK_CHARS = 100;
/**
 * Caller audio of the turn before that still counts after a turn ends, ms: a final that comes a
 * moment after the turn was answered may still transcribe its last seconds.
 */
export const CARRIED_AUDIO_MS = 3000;
/**
 * The most text one caller turn hands the LLM (README, "Limits"): about three minutes of
 * speech without a pause long enough to end the turn. Longer text keeps its start, cut at a word.
 */
export const MAX_TURN_TEXT_CHARS = 2000;

export class TranscriptGuard {
  /** Caller audio since the last turn ended (with CARRIED_AUDIO_MS of the one before), ms. */
  private audioMs = 0;
  /** Characters of final text accepted since the last turn ended. */
  private acceptedChars = 0;
  /** Transcripts refused in this call. */
  faults = 0;

  /** `callerAudioMs` more of the caller's audio has arrived. */
  heard(callerAudioMs: number): void {
    this.audioMs += callerAudioMs;
  }

  /** How many characters of transcript the audio since the last turn could hold. */
  allowedChars(): number {
    return TRANSCRIPT_SLACK_CHARS + Math.ceil((this.audioMs / 1000) * MAX_TRANSCRIPT_CHARS_PER_SEC);
  }

  /**
   * A final transcript: true when it fits the audio since the last turn (with the finals already
   * accepted), and it counts from now on; false when it cannot be speech.
   */
  acceptFinal(text: string): boolean {
    const chars = text.trim().length;
    if (this.acceptedChars + chars > this.allowedChars()) {
      this.faults += 1;
      return false;
    }
    this.acceptedChars += chars;
    return true;
  }

  /** An interim transcript: checked the same way, without counting (the final replaces it). */
  fitsInterim(text: string): boolean {
    if (this.acceptedChars + text.trim().length <= this.allowedChars()) return true;
    this.faults += 1;
    return false;
  }

  /** A turn ended (answered, or dropped as a false alarm): the next one starts counting. */
  turnEnded(): void {
    this.audioMs = Math.min(this.audioMs, CARRIED_AUDIO_MS);
    this.acceptedChars = 0;
  }
}

/** The text of one turn as the LLM gets it: at most MAX_TURN_TEXT_CHARS, cut at a word when longer. */
export function capTurnText(text: string): string {
  if (text.length <= MAX_TURN_TEXT_CHARS) return text;
  const cut = text.slice(0, MAX_TURN_TEXT_CHARS);
  const lastSpace = cut.lastIndexOf(' ');
  return lastSpace > MAX_TURN_TEXT_CHARS / 2 ? cut.slice(0, lastSpace) : cut;
}
