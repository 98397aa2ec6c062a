import { z } from 'zod';
import { MAX_AUDIO_MS_PER_MESSAGE } from '../audio/audio-rate-limit.js';
import { isRecord } from '../shared/is-record.js';

/**
 * Twilio Media Streams messages, both directions, as the carrier sends them (most numbers are
 * strings). One file so the server, the phone simulator and the tests agree on the wire.
 */

const seq = z.string().max(20);

/**
 * Longest inbound media payload: MAX_AUDIO_MS_PER_MESSAGE of 8 kHz mu-law (8 bytes a ms) in
 * base64. Twilio's own frames are 20 ms: 160 bytes, 216 characters.
 */
export const MAX_MEDIA_PAYLOAD_CHARS = Math.ceil((MAX_AUDIO_MS_PER_MESSAGE * 8) / 3) * 4;

export const connectedMessage = z.object({
  event: z.literal('connected'),
  protocol: z.string().max(64).optional(),
  version: z.string().max(32).optional(),
});

export const startMessage = z.object({
  event: z.literal('start'),
  sequenceNumber: seq.optional(),
  streamSid: z.string().min(1).max(128),
  start: z.object({
    accountSid: z.string().max(128).optional(),
    streamSid: z.string().min(1).max(128),
    callSid: z.string().min(1).max(128),
    tracks: z.array(z.string().max(32)).max(4).optional(),
    customParameters: z.record(z.string().max(256), z.string().max(4096)).optional(),
    mediaFormat: z.object({ encoding: z.string().max(64), sampleRate: z.number(), channels: z.number() }).optional(),
  }),
});

export const mediaMessage = z.object({
  event: z.literal('media'),
  sequenceNumber: seq.optional(),
  streamSid: z.string().max(128).optional(),
  media: z.object({
    track: z.string().max(32).optional(),
    chunk: z.string().max(20).optional(),
    timestamp: z.string().max(20).optional(),
    /** base64 mu-law 8 kHz; 20 ms = 160 bytes = 216 characters. */
    payload: z.string().max(MAX_MEDIA_PAYLOAD_CHARS),
  }),
});

const optionalString = (value: unknown, maxLength: number) =>
  value === undefined || (typeof value === 'string' && value.length <= maxLength);

/**
 * The checks of `mediaMessage`, by hand: media arrives 50 times a second per call, and the schema
 * costs more than the rest of the frame's work. Keep in step with `mediaMessage` (the tests compare
 * them); a message this rejects goes through the schema, which words the error.
 */
export function isWellFormedMedia(json: unknown): json is z.output<typeof mediaMessage> {
  if (!isRecord(json)) return false;
  const media = json.media;
  return (
    json.event === 'media' &&
    optionalString(json.sequenceNumber, 20) &&
    optionalString(json.streamSid, 128) &&
    isRecord(media) &&
    optionalString(media.track, 32) &&
    optionalString(media.chunk, 20) &&
    optionalString(media.timestamp, 20) &&
    typeof media.payload === 'string' &&
    media.payload.length <= MAX_MEDIA_PAYLOAD_CHARS
  );
}

export const dtmfMessage = z.object({
  event: z.literal('dtmf'),
  sequenceNumber: seq.optional(),
  streamSid: z.string().max(128).optional(),
  dtmf: z.object({ track: z.string().max(32).optional(), digit: z.string().regex(/^[0-9*#A-Da-d]$/) }),
});

export const markMessage = z.object({
  event: z.literal('mark'),
  sequenceNumber: seq.optional(),
  streamSid: z.string().max(128).optional(),
  mark: z.object({ name: z.string().max(256) }),
});

/**
 * The checks of `markMessage`, by hand: a talking call's marks come back ten times a second
 * (playout.ts), and the schema cost as much as the rest of their handling. Same contract as
 * isWellFormedMedia.
 */
export function isWellFormedMark(json: unknown): json is z.output<typeof markMessage> {
  if (!isRecord(json)) return false;
  const mark = json.mark;
  return (
    json.event === 'mark' &&
    optionalString(json.sequenceNumber, 20) &&
    optionalString(json.streamSid, 128) &&
    isRecord(mark) &&
    typeof mark.name === 'string' &&
    mark.name.length <= 256
  );
}

export const stopMessage = z.object({
  event: z.literal('stop'),
  sequenceNumber: seq.optional(),
  streamSid: z.string().max(128).optional(),
  stop: z.object({ accountSid: z.string().max(128).optional(), callSid: z.string().max(128).optional() }).optional(),
});

/** Everything the carrier may send us. Unknown events are recognised separately and ignored. */
export const inboundMessage = z.discriminatedUnion('event', [
  connectedMessage,
  startMessage,
  mediaMessage,
  dtmfMessage,
  markMessage,
  stopMessage,
]);
export type InboundMessage = z.output<typeof inboundMessage>;
export type StartMessage = z.output<typeof startMessage>;

export const INBOUND_EVENTS = new Set(['connected', 'start', 'media', 'dtmf', 'mark', 'stop']);

/** What we send back. Built by string concatenation on the hot path; these schemas check it in tests. */
export const outboundMessage = z.discriminatedUnion('event', [
  z.object({ event: z.literal('media'), streamSid: z.string(), media: z.object({ payload: z.string() }) }).strict(),
  z.object({ event: z.literal('mark'), streamSid: z.string(), mark: z.object({ name: z.string() }) }).strict(),
  z.object({ event: z.literal('clear'), streamSid: z.string() }).strict(),
]);
export type OutboundMessage = z.output<typeof outboundMessage>;

export function outboundMedia(streamSid: string, payloadBase64: string): string {
  return outboundMediaPrefix(streamSid) + payloadBase64 + OUTBOUND_MEDIA_SUFFIX;
}

/** An outbound media message is this prefix, the base64 payload, and the suffix: the transport builds the prefix once per stream. */
export function outboundMediaPrefix(streamSid: string): string {
  return `{"event":"media","streamSid":${JSON.stringify(streamSid)},"media":{"payload":"`;
}

export const OUTBOUND_MEDIA_SUFFIX = '"}}';

export function outboundMark(streamSid: string, name: string): string {
  return JSON.stringify({ event: 'mark', streamSid, mark: { name } });
}

export function outboundClear(streamSid: string): string {
  return JSON.stringify({ event: 'clear', streamSid });
}
