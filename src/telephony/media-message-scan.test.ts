import { describe, expect, it } from 'vitest';
import { decodesWhole, emptyScannedMedia, scanMediaMessage } from './media-message-scan.js';
import { isWellFormedMedia, MAX_MEDIA_PAYLOAD_CHARS } from './twilio-messages.js';

const PAYLOAD = Buffer.from(Array.from({ length: 160 }, (_, i) => (i * 37) & 0xff)).toString('base64');
const SID = 'MZ0123456789abcdef0123456789abcdef';

/** An integer in [0, n) from a fixed seed: the same cases every run. */
function seededRandom(seed: number): (n: number) => number {
  let state = seed;
  return (n) => {
    state = (state * 1103515245 + 12345) >>> 0;
    return state % n;
  };
}

/** Twilio's own message, as its docs show it. */
const twilio = (payload = PAYLOAD) =>
  `{"event":"media","sequenceNumber":"4","media":{"track":"inbound","chunk":"2","timestamp":"5","payload":"${payload}"},"streamSid":"${SID}"}`;

interface Read {
  streamSid?: string;
  track?: string;
  timestamp?: string;
  payload: string;
}

/** The fast path as the transport takes it: the scan, then the payload decoding whole. */
function fast(text: string | Buffer): Read | undefined {
  const bytes = Buffer.isBuffer(text) ? text : Buffer.from(text, 'utf8');
  const found = emptyScannedMedia();
  if (!scanMediaMessage(bytes, found)) return undefined;
  const slice = (start: number, end: number) => (start < 0 ? undefined : bytes.toString('latin1', start, end));
  const payload = slice(found.payloadStart, found.payloadEnd)!;
  if (!decodesWhole(payload, Buffer.from(payload, 'base64').length)) return undefined;
  return {
    streamSid: slice(found.streamSidStart, found.streamSidEnd),
    track: slice(found.trackStart, found.trackEnd),
    timestamp: slice(found.timestampStart, found.timestampEnd),
    payload,
  };
}

/** The general path: JSON.parse and the hand check, as before. */
function general(text: string | Buffer): Read | undefined {
  let json: unknown;
  try {
    json = JSON.parse(text.toString());
  } catch {
    return undefined;
  }
  if (!isWellFormedMedia(json)) return undefined;
  return {
    streamSid: json.streamSid,
    track: json.media.track,
    timestamp: json.media.timestamp,
    payload: json.media.payload,
  };
}

/** Whatever the fast path reads, the general path reads the same; `fastReads`: whether it should read it at all. */
function expectAgreement(text: string | Buffer, fastReads: boolean): void {
  const read = fast(text);
  if (read) expect(read).toEqual(general(text));
  expect(read !== undefined, `fast path on ${text.toString().slice(0, 200)}`).toBe(fastReads);
}

describe('scanMediaMessage', () => {
  it("reads Twilio's media message as JSON.parse does", () => {
    expectAgreement(twilio(), true);
    expect(fast(twilio())).toEqual({ streamSid: SID, track: 'inbound', timestamp: '5', payload: PAYLOAD });
  });

  it('reads the keys in any order, with or without whitespace, and the optional ones absent', () => {
    const media = [`"track":"inbound"`, `"chunk":"2"`, `"timestamp":"5"`, `"payload":"${PAYLOAD}"`];
    const top = (inner: string) => [
      `"event":"media"`,
      `"sequenceNumber":"4"`,
      `"media":{${inner}}`,
      `"streamSid":"${SID}"`,
    ];
    for (let rotation = 0; rotation < 4; rotation++) {
      const inner = [...media.slice(rotation), ...media.slice(0, rotation)].join(',');
      const outer = top(inner);
      expectAgreement(`{${[...outer.slice(rotation), ...outer.slice(0, rotation)].join(',')}}`, true);
    }
    expectAgreement(`{"event":"media","media":{"payload":"${PAYLOAD}"}}`, true);
    expectAgreement(`{"event":"media","streamSid":"${SID}","media":{"payload":""}}`, true);
    expectAgreement(
      ` \r\n{ "event" : "media" ,\t"media" : { "payload" : "${PAYLOAD}" , "track":"outbound" } }\n`,
      true,
    );
  });

  it('leaves every other message to the general path', () => {
    const cases = [
      // another event, or none
      `{"event":"mark","media":{"payload":"${PAYLOAD}"}}`,
      `{"media":{"payload":"${PAYLOAD}"}}`,
      `{"event":"medium","media":{"payload":"${PAYLOAD}"}}`,
      // keys the scan does not know (the schema strips them), or twice (JSON.parse keeps the last)
      `{"event":"media","extra":"x","media":{"payload":"${PAYLOAD}"}}`,
      `{"event":"media","media":{"payload":"${PAYLOAD}","extra":"x"}}`,
      `{"event":"media","media":{"payload":"${PAYLOAD}"},"media":{"payload":"AAAA"}}`,
      `{"event":"media","media":{"payload":"${PAYLOAD}","payload":"AAAA"}}`,
      `{"event":"media","event":"media","media":{"payload":"${PAYLOAD}"}}`,
      // values that are not plain strings
      `{"event":"media","sequenceNumber":4,"media":{"payload":"${PAYLOAD}"}}`,
      `{"event":"media","media":{"payload":null}}`,
      `{"event":"media","media":null}`,
      `{"event":"media","media":"x"}`,
      `{"event":"media","media":{}}`,
      `{"event":"media","media":{"payload":"${PAYLOAD}","timestamp":5}}`,
      // escapes and non-ASCII in a value
      `{"event":"media","streamSid":"MZ\\u0041","media":{"payload":"${PAYLOAD}"}}`,
      `{"event":"media","streamSid":"MZ\u00e9","media":{"payload":"${PAYLOAD}"}}`,
      `{"event":"med\\u0069a","media":{"payload":"${PAYLOAD}"}}`,
      `{"ev\\u0065nt":"media","media":{"payload":"${PAYLOAD}"}}`,
      `{"event":"media","media":{"payload":"${PAYLOAD.slice(0, 8)}\\/${PAYLOAD.slice(10)}"}}`,
      `{"event":"media","media":{"payload":"${PAYLOAD.slice(0, 8)}\\"${PAYLOAD.slice(10)}"}}`,
      // a payload that is not base64 through and through
      `{"event":"media","media":{"payload":"${PAYLOAD.slice(0, 8)}\u00e9${PAYLOAD.slice(9)}"}}`,
      `{"event":"media","media":{"payload":"${PAYLOAD.slice(0, 8)} ${PAYLOAD.slice(9)}"}}`,
      `{"event":"media","media":{"payload":"${PAYLOAD.slice(0, 8)}\t${PAYLOAD.slice(9)}"}}`,
      `{"event":"media","media":{"payload":"${PAYLOAD.slice(0, 8)}!${PAYLOAD.slice(9)}"}}`,
      `{"event":"media","media":{"payload":"QQ==QUJD"}}`,
      `{"event":"media","media":{"payload":"QUJD="}}`,
      `{"event":"media","media":{"payload":"Q==="}}`,
      // too long for the schema
      `{"event":"media","sequenceNumber":"${'1'.repeat(21)}","media":{"payload":"${PAYLOAD}"}}`,
      `{"event":"media","streamSid":"${'M'.repeat(129)}","media":{"payload":"${PAYLOAD}"}}`,
      `{"event":"media","media":{"payload":"${PAYLOAD}","track":"${'t'.repeat(33)}"}}`,
      `{"event":"media","media":{"payload":"${'A'.repeat(MAX_MEDIA_PAYLOAD_CHARS + 4)}"}}`,
      // broken JSON
      twilio().slice(0, -1),
      `${twilio()}x`,
      `${twilio()}{}`,
      `[${twilio()}]`,
      `{"event":"media",,"media":{"payload":"${PAYLOAD}"}}`,
      `{"event":"media","media":{"payload":"${PAYLOAD}"},}`,
      `{"event":"media","media":{"payload":"${PAYLOAD}"`,
      `{"event":"media" "media":{"payload":"${PAYLOAD}"}}`,
      `\ufeff${twilio()}`,
      '',
      '{',
    ];
    for (const text of cases) expectAgreement(text, false);
    // A raw control character in a string, which JSON.parse refuses.
    expectAgreement(Buffer.from(twilio().replace('"inbound"', '"in\u0001bound"')), false);
    expectAgreement(Buffer.from(twilio(`${PAYLOAD.slice(0, 8)}\u0000${PAYLOAD.slice(9)}`)), false);
  });

  it('agrees with JSON.parse on messages mangled at random', () => {
    const random = seededRandom(1);
    const alphabet = '{}[]":,\\ \tAZaz09+/=-_\u0001\u00e9mediaeventpayload';
    const base = twilio(PAYLOAD.slice(0, 24));
    for (let i = 0; i < 20_000; i++) {
      const chars = [...base];
      for (let edits = 1 + random(3); edits > 0; edits--) {
        const at = random(chars.length + 1);
        const what = random(3);
        if (what === 0) chars.splice(at, 1);
        else if (what === 1) chars.splice(at, 0, alphabet[random(alphabet.length)]!);
        else chars[at] = alphabet[random(alphabet.length)]!;
      }
      const text = chars.join('');
      const read = fast(text);
      if (read) expect(read, text).toEqual(general(text));
    }
  });
});

describe('decodesWhole', () => {
  it('is true exactly for base64 in whole groups of four, padded or not', () => {
    const random = seededRandom(7);
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/-_= !*\u00e9\u0001.';
    const base64 = /^(?:[A-Za-z0-9+/\-_]{4})*(?:[A-Za-z0-9+/\-_]{2}==|[A-Za-z0-9+/\-_]{3}=)?$/;
    for (let i = 0; i < 50_000; i++) {
      const length = random(13);
      let text = '';
      for (let c = 0; c < length; c++)
        text += random(4) === 0 ? alphabet[random(alphabet.length)] : alphabet[random(64)];
      const decoded = Buffer.from(text, 'base64').length;
      expect(decodesWhole(text, decoded), JSON.stringify(text)).toBe(base64.test(text));
    }
  });
});
