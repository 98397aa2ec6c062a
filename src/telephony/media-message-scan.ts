import { MAX_MEDIA_PAYLOAD_CHARS } from './twilio-messages.js';

/**
 * The carrier's `media` message read straight from the websocket's bytes, without JSON.parse.
 *
 * A caller's frame comes 50 times a second per call; on a server under load, JSON.parse (every
 * key made an interned string, the payload a new one, an object per message) took 8 % of the main
 * thread's samples, and this reader about half as much (docs/cost-per-call.md). It reads only the
 * shape a carrier sends: one object with `event` "media", optional `sequenceNumber` and
 * `streamSid`, and `media` holding optional `track`, `chunk`, `timestamp` and a `payload`, every
 * value a plain string (printable ASCII, no backslash), keys once each, in any order, with or
 * without whitespace between tokens. The payload's characters are checked by decoding it
 * (decodesWhole), not here. What it reads is what `JSON.parse` and `isWellFormedMedia` would have
 * accepted, with the same values (the tests compare them, on every rule and on mangled messages).
 * Anything else (another event, another key, a key twice, an escape, a non-ASCII byte, a value too
 * long, broken JSON) returns false and takes the general path, which parses, checks and words the
 * error as before.
 */

/** Where each string value lies in the message: [start, end) byte offsets, start -1 when absent. */
export interface ScannedMedia {
  streamSidStart: number;
  streamSidEnd: number;
  trackStart: number;
  trackEnd: number;
  timestampStart: number;
  timestampEnd: number;
  payloadStart: number;
  payloadEnd: number;
}

export function emptyScannedMedia(): ScannedMedia {
  return {
    streamSidStart: -1,
    streamSidEnd: -1,
    trackStart: -1,
    trackEnd: -1,
    timestampStart: -1,
    timestampEnd: -1,
    payloadStart: -1,
    payloadEnd: -1,
  };
}

const QUOTE = 0x22;
const COLON = 0x3a;
const COMMA = 0x2c;
const OPEN = 0x7b;
const CLOSE = 0x7d;

/** The keys, as bytes; each may appear once. The limits are `mediaMessage`'s. */
const KEY = {
  event: bytes('event'),
  sequenceNumber: bytes('sequenceNumber'),
  streamSid: bytes('streamSid'),
  media: bytes('media'),
  track: bytes('track'),
  chunk: bytes('chunk'),
  timestamp: bytes('timestamp'),
  payload: bytes('payload'),
};
const BY_LENGTH: Array<Uint8Array[] | undefined> = [];
for (const key of Object.values(KEY)) BY_LENGTH[key.length] = [...(BY_LENGTH[key.length] ?? []), key];

/**
 * What each byte is inside a string: PLAIN (printable ASCII), the closing QUOTE, or anything a
 * plain string cannot hold as it is (a backslash's escape, a control character, non-ASCII).
 */
const PLAIN = 0;
const END = 1;
const NOT_PLAIN = 2;
const IN_STRING = Uint8Array.from({ length: 256 }, (_, byte) =>
  byte === QUOTE ? END : byte >= 0x20 && byte <= 0x7e && byte !== 0x5c ? PLAIN : NOT_PLAIN,
);

/**
 * The scan's position in the message, and the end of the last string read. Module state rather
 * than an object per message: a scan runs to the end without yielding, so nothing else sees it.
 */
let position = 0;
let valueEnd = 0;

/**
 * Reads a media message into `into` (offsets into `message`). False, with `into` in any state, when
 * the message is anything but the shape above.
 */
export function scanMediaMessage(message: Buffer, into: ScannedMedia): boolean {
  let seen = 0;
  let isMedia = false;
  into.streamSidStart = into.trackStart = into.timestampStart = into.payloadStart = -1;
  position = 0;
  if (!take(message, OPEN)) return false;
  do {
    const key = readKey(message);
    if (key === undefined) return false;
    if (key === KEY.media) {
      if (seen & 8 || !scanMedia(message, into)) return false;
      seen |= 8;
      continue;
    }
    const start = readString(message, key === KEY.streamSid ? 128 : 20);
    if (start < 0) return false;
    if (key === KEY.event) {
      if (seen & 1) return false;
      seen |= 1;
      // The value "media" is spelled as the key is.
      isMedia = known(message, start, valueEnd) === KEY.media;
    } else if (key === KEY.sequenceNumber) {
      if (seen & 2) return false;
      seen |= 2;
    } else if (key === KEY.streamSid) {
      if (seen & 4) return false;
      seen |= 4;
      into.streamSidStart = start;
      into.streamSidEnd = valueEnd;
    } else return false;
  } while (take(message, COMMA));
  return take(message, CLOSE) && atEnd(message) && isMedia && (seen & 8) !== 0;
}

/** The `media` object: its keys once each, a payload required. */
function scanMedia(message: Buffer, into: ScannedMedia): boolean {
  let seen = 0;
  if (!take(message, OPEN)) return false;
  do {
    const key = readKey(message);
    const bit = key === KEY.payload ? 1 : key === KEY.track ? 2 : key === KEY.timestamp ? 4 : key === KEY.chunk ? 8 : 0;
    if (bit === 0 || seen & bit) return false;
    seen |= bit;
    const start = bit === 1 ? readPayload(message) : readString(message, bit === 2 ? 32 : 20);
    if (start < 0) return false;
    if (bit === 1) {
      into.payloadStart = start;
      into.payloadEnd = valueEnd;
    } else if (bit === 2) {
      into.trackStart = start;
      into.trackEnd = valueEnd;
    } else if (bit === 4) {
      into.timestampStart = start;
      into.timestampEnd = valueEnd;
    }
  } while (take(message, COMMA));
  return take(message, CLOSE);
}

/** A key and its colon: which of KEY it is, or undefined. */
function readKey(message: Buffer): Uint8Array | undefined {
  const start = readString(message, 32);
  if (start < 0 || !take(message, COLON)) return undefined;
  return known(message, start, valueEnd);
}

/**
 * A plain string of at most `maxChars`: where its characters start (its end in valueEnd), or -1 if
 * it is anything else (an escape, a control character, non-ASCII, too long, unterminated).
 */
function readString(message: Buffer, maxChars: number): number {
  if (!take(message, QUOTE)) return -1;
  const start = position;
  const limit = Math.min(message.length, start + maxChars + 1);
  for (let i = start; i < limit; i++) {
    const kind = IN_STRING[message[i]!]!;
    if (kind === PLAIN) continue;
    if (kind === NOT_PLAIN) return -1;
    valueEnd = i;
    position = i + 1;
    return start;
  }
  return -1;
}

/**
 * The payload: up to the next quote, found natively, at most MAX_MEDIA_PAYLOAD_CHARS. Its
 * characters are not looked at here (a loop over them cost as much as JSON.parse): the caller
 * keeps it only if it decodes whole (decodesWhole), which a payload holding anything but base64
 * (an escape, a control character, non-ASCII) cannot.
 */
function readPayload(message: Buffer): number {
  if (!take(message, QUOTE)) return -1;
  const start = position;
  const end = message.indexOf(QUOTE, start);
  if (end < 0 || end - start > MAX_MEDIA_PAYLOAD_CHARS) return -1;
  valueEnd = end;
  position = end + 1;
  return start;
}

/** Skips whitespace, then takes `byte` if it is next. */
function take(message: Buffer, byte: number): boolean {
  skipSpace(message);
  if (message[position] !== byte) return false;
  position++;
  return true;
}

function atEnd(message: Buffer): boolean {
  skipSpace(message);
  return position === message.length;
}

function skipSpace(message: Buffer): void {
  let c = message[position];
  while (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) c = message[++position];
}

/** The key of KEY spelled by bytes [start, end), or undefined. */
function known(message: Buffer, start: number, end: number): Uint8Array | undefined {
  const candidates = BY_LENGTH[end - start];
  if (candidates === undefined) return undefined;
  for (const candidate of candidates) if (sameBytes(message, start, candidate)) return candidate;
  return undefined;
}

function sameBytes(message: Buffer, start: number, word: Uint8Array): boolean {
  for (let i = 0; i < word.length; i++) if (message[start + i] !== word[i]) return false;
  return true;
}

function bytes(text: string): Uint8Array {
  return new TextEncoder().encode(text);
}

/**
 * Whether a payload decoded to every byte its length holds (3 per 4 characters, less the `=`
 * padding), in whole groups of 4: true only if every character is base64 (Node's decoder skips any
 * other, and a skipped character always costs a byte). So a payload that is its JSON string's
 * value character for character, with no escape, control character or non-ASCII in it.
 */
export function decodesWhole(payload: string, decodedBytes: number): boolean {
  const chars = payload.length;
  if (chars % 4 !== 0) return false;
  const padding =
    chars === 0 ? 0 : payload.charCodeAt(chars - 1) !== EQUALS ? 0 : payload.charCodeAt(chars - 2) === EQUALS ? 2 : 1;
  return decodedBytes === (chars / 4) * 3 - padding;
}

const EQUALS = 0x3d;
