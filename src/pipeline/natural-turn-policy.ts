import type { TurnPolicy } from './turn-controller.js';

/**
 * Turn-taking of the natural_conversation profile. VAD is tuned to notice a pause sooner (see
 * NATURAL_VAD_STOP_SECS), and the words decide what the pause means: a complete thought ends the
 * turn at once, a trailing filler or conjunction ("so, um", "and") holds it open for the rest,
 * anything else gets a short grace. Acknowledgements ("mm-hmm", "right") never cut the bot off.
 */

/** VAD silence that ends speech for this profile, unless the bot's config sets stop_secs. */
export const NATURAL_VAD_STOP_SECS = 0.3;

/** After a filler or a conjunction: the caller is still forming the sentence. */
const INCOMPLETE_WAIT_MS = 1500;
/** Words without a clear ending: a little grace for the rest. */
const UNSURE_WAIT_MS = 400;
/** However the words read, one turn is never held open longer than this in total. */
const MAX_EXTRA_WAIT_MS = 2500;

const FILLERS = new Set(['um', 'umm', 'uh', 'uhh', 'er', 'erm', 'hmm', 'like', 'well', 'so']);
const TRAILING_CONNECTORS = new Set([
  'and',
  'but',
  'or',
  'so',
  'because',
  'cause',
  'then',
  'that',
  'which',
  'who',
  'if',
  'when',
  'while',
  'with',
  'to',
  'for',
  'of',
  'the',
  'a',
  'an',
  'my',
  'your',
  'is',
  'are',
  'was',
  'i',
  "i'm",
  'we',
  'at',
  'in',
  'on',
]);
const BACKCHANNEL_WORDS = new Set([
  'mm',
  'mhm',
  'mmhmm',
  'mm-hmm',
  'uh-huh',
  'uhhuh',
  'hmm',
  'yeah',
  'yep',
  'yes',
  'ok',
  'okay',
  'right',
  'sure',
  'uh',
  'huh',
  'aha',
  'ah',
  'oh',
  'i',
  'see',
  'got',
  'it',
  'cool',
  'nice',
  'true',
]);
/** A backchannel is short: "yeah, I see" is one, "yes I want the blue one" is not. */
const MAX_BACKCHANNEL_WORDS = 3;

function words(text: string): string[] {
  return text
    .toLowerCase()
    .replace(/[^\p{L}\p{N}'\s-]/gu, ' ')
    .split(/\s+/)
    .filter((w) => w.length > 0);
}

/** Extra ms to wait for more words after the caller paused having said `text`. */
export function naturalExtraWaitMs(text: string): number {
  const trimmed = text.trim();
  const list = words(trimmed);
  const last = list.at(-1);
  if (last === undefined) return 0;
  if (FILLERS.has(last) || TRAILING_CONNECTORS.has(last) || /[,;:\u2026-]$|\.\.\.$/.test(trimmed))
    return INCOMPLETE_WAIT_MS;
  if (/[.?!]["')\]]?$/.test(trimmed)) return 0;
  return UNSURE_WAIT_MS;
}

/** True when the words are only an acknowledgement, not something to answer or yield to. */
export function isBackchannel(text: string): boolean {
  const list = words(text);
  return list.length > 0 && list.length <= MAX_BACKCHANNEL_WORDS && list.every((w) => BACKCHANNEL_WORDS.has(w));
}

export const NATURAL_TURN_POLICY: TurnPolicy = {
  // Speech alone does not interrupt: it takes a word that is not an acknowledgement.
  minInterruptionWords: 1,
  finalTranscriptWaitMs: 1000,
  extraWaitMs: naturalExtraWaitMs,
  maxExtraWaitMs: MAX_EXTRA_WAIT_MS,
  isBackchannel,
};
