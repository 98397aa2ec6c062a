import type { TranscriptEntry } from './call-record.js';

/** hh:mm:ss.ttt, as WebVTT cue timings are written. */
function timestamp(ms: number): string {
  const total = Math.max(0, Math.round(ms));
  const hours = Math.floor(total / 3_600_000);
  const minutes = Math.floor(total / 60_000) % 60;
  const seconds = Math.floor(total / 1000) % 60;
  const millis = total % 1000;
  const pad = (n: number, width = 2) => String(n).padStart(width, '0');
  return `${pad(hours)}:${pad(minutes)}:${pad(seconds)}.${pad(millis, 3)}`;
}

/** Cue text may not hold `<`, `&` or a blank line (it would end the cue); `-->` is spelled out harmlessly. */
function cueText(text: string): string {
  return text
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/\s*\n\s*/g, ' ');
}

const VOICE = { caller: 'Caller', bot: 'Bot' } as const;

/**
 * The transcript as a WebVTT file: one cue per entry, each in its speaker's voice (`<v Caller>`,
 * `<v Bot>`), timed from the call's start, which is also the recording's. A cue must end after
 * it starts, so an instant entry lasts a millisecond.
 */
export function transcriptToVtt(entries: readonly TranscriptEntry[]): string {
  const cues = entries.map((entry, i) => {
    const end = Math.max(entry.end_ms, entry.start_ms + 1);
    return `${i + 1}\n${timestamp(entry.start_ms)} --> ${timestamp(end)}\n<v ${VOICE[entry.speaker]}>${cueText(entry.text)}</v>`;
  });
  return ['WEBVTT', '', ...cues.flatMap((cue) => [cue, ''])].join('\n');
}
