import { describe, expect, it } from 'vitest';
import { MAX_AUDIO_MS_PER_MESSAGE } from '../audio/audio-rate-limit.js';
import {
  MAX_MEDIA_PAYLOAD_CHARS,
  isWellFormedMark,
  isWellFormedMedia,
  markMessage,
  mediaMessage,
  outboundMedia,
  outboundMessage,
} from './twilio-messages.js';

const payload = Buffer.alloc(160, 0xff).toString('base64');
const good = {
  event: 'media',
  sequenceNumber: '3',
  streamSid: 'MZ1',
  media: { track: 'inbound', chunk: '2', timestamp: '40', payload },
};

/** Messages on both sides of every rule of mediaMessage. */
const cases: unknown[] = [
  good,
  { event: 'media', media: { payload } },
  { event: 'media', media: { payload: '' }, extra: 1 },
  { ...good, sequenceNumber: 3 },
  { ...good, sequenceNumber: 'x'.repeat(21) },
  { ...good, sequenceNumber: null },
  { ...good, streamSid: 'x'.repeat(129) },
  { ...good, streamSid: 5 },
  { ...good, media: null },
  { ...good, media: [payload] },
  { ...good, media: 'payload' },
  { event: 'media' },
  { ...good, media: { ...good.media, track: 'x'.repeat(33) } },
  { ...good, media: { ...good.media, chunk: 2 } },
  { ...good, media: { ...good.media, timestamp: 'x'.repeat(21) } },
  { ...good, media: { ...good.media, payload: 7 } },
  { ...good, media: { ...good.media, payload: 'A'.repeat(MAX_MEDIA_PAYLOAD_CHARS) } },
  { ...good, media: { ...good.media, payload: 'A'.repeat(MAX_MEDIA_PAYLOAD_CHARS + 1) } },
  { ...good, event: 'mark' },
  null,
  [],
  'media',
];

/** A hand-written check and its schema give the same verdict on every message. */
function expectSameVerdicts(
  messages: unknown[],
  check: (json: unknown) => boolean,
  schema: { safeParse(json: unknown): { success: boolean } },
): void {
  for (const message of messages)
    expect({ message, ok: check(message) }).toEqual({ message, ok: schema.safeParse(message).success });
}

describe('isWellFormedMedia', () => {
  it('accepts exactly what the mediaMessage schema accepts', () => {
    expectSameVerdicts(cases, isWellFormedMedia, mediaMessage);
  });
});

const goodMark = { event: 'mark', sequenceNumber: '4', streamSid: 'MZ1', mark: { name: 'g3-m12' } };

/** Messages on both sides of every rule of markMessage. */
const markCases: unknown[] = [
  goodMark,
  { event: 'mark', mark: { name: '' } },
  { event: 'mark', mark: { name: 'x' }, extra: 1 },
  { ...goodMark, mark: { name: 'x'.repeat(256) } },
  { ...goodMark, mark: { name: 'x'.repeat(257) } },
  { ...goodMark, mark: { name: 7 } },
  { ...goodMark, mark: {} },
  { ...goodMark, mark: null },
  { ...goodMark, mark: ['m'] },
  { ...goodMark, mark: 'm' },
  { ...goodMark, sequenceNumber: 4 },
  { ...goodMark, sequenceNumber: 'x'.repeat(21) },
  { ...goodMark, streamSid: 'x'.repeat(129) },
  { ...goodMark, streamSid: null },
  { ...goodMark, event: 'media' },
  { event: 'mark' },
  null,
  [goodMark],
  'mark',
];

describe('isWellFormedMark', () => {
  it('accepts exactly what the markMessage schema accepts', () => {
    expectSameVerdicts(markCases, isWellFormedMark, markMessage);
  });
});

describe('MAX_MEDIA_PAYLOAD_CHARS', () => {
  it('is MAX_AUDIO_MS_PER_MESSAGE of 8 kHz mu-law in base64', () => {
    expect(MAX_MEDIA_PAYLOAD_CHARS).toBe(Buffer.alloc(MAX_AUDIO_MS_PER_MESSAGE * 8).toString('base64').length);
  });
});

describe('outboundMedia', () => {
  it('is valid JSON of the outbound media shape, whatever the stream id holds', () => {
    const sid = 'MZ"\\\u2028odd';
    const text = outboundMedia(sid, payload);
    expect(outboundMessage.parse(JSON.parse(text))).toEqual({ event: 'media', streamSid: sid, media: { payload } });
  });
});
