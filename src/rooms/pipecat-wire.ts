import { z } from 'zod';
import { type AudioRawFrame, Frame } from './pipecat-frames.js';
import { clientMessage, RTVI_LABEL } from './room-messages.js';
import { type ClientFrame, describeIssue, pcm16FromBytes, type RoomWire } from './room-wire.js';

/**
 * The wire of Pipecat's websocket transport (`@pipecat-ai/websocket-transport`): every message is
 * a binary protobuf `Frame`. Microphone audio comes in audio frames that carry their own rate
 * and channel count; RTVI messages travel as JSON inside message frames, both ways. The bot's
 * audio goes out in audio frames at the transport's player rate.
 */

/** The transport's player plays every audio frame at this rate (its default `playerSampleRate`). */
export const PIPECAT_PLAYER_RATE_HZ = 24000;

/** Microphone rates accepted in audio frames (resampled to the room's 8 kHz). */
export const PIPECAT_MIC_RATES_HZ = [8000, 11025, 12000, 16000, 22050, 24000, 32000, 44100, 48000] as const;

/** The RTVI client messages the room acts on; others are answered with an error-response. */
const ROOM_CLIENT_TYPES = new Set(['client-ready', 'user-image', 'disconnect-bot', 'llm-function-call-result']);

const envelope = z
  .object({
    label: z.literal(RTVI_LABEL, { error: () => `label must be "${RTVI_LABEL}"` }),
    type: z.string().max(64),
    id: z.string().max(64).optional(),
  })
  .passthrough();

const malformed = (reason: string): ClientFrame => ({ kind: 'malformed', reason });

function decodeAudio(audio: AudioRawFrame): ClientFrame {
  const rateHz = audio.sampleRate;
  if (!(PIPECAT_MIC_RATES_HZ as readonly number[]).includes(rateHz)) {
    return malformed(`malformed message: audio sample_rate ${rateHz} is not one of ${PIPECAT_MIC_RATES_HZ.join(', ')}`);
  }
  const channels = audio.numChannels;
  if (channels !== 1 && channels !== 2)
    return malformed(`malformed message: audio num_channels ${channels} is not 1 or 2`);
  if (audio.audio.byteLength % (2 * channels) !== 0) {
    return malformed('malformed message: audio must be 16-bit PCM (whole samples for every channel)');
  }
  const interleaved = pcm16FromBytes(audio.audio);
  if (channels === 1) return { kind: 'audio', pcm: interleaved, sampleRateHz: rateHz };
  const mono = new Int16Array(interleaved.length / 2);
  for (let i = 0; i < mono.length; i++) mono[i] = (interleaved[2 * i]! + interleaved[2 * i + 1]!) >> 1;
  return { kind: 'audio', pcm: mono, sampleRateHz: rateHz };
}

/**
 * One RTVI message of a Pipecat client (JSON text): what the room acts on, a refusal for the SDK's
 * other requests, or why it is malformed. The websocket transport carries it in message frames,
 * the SmallWebRTC transport as data channel text.
 */
export function decodeRtviMessage(data: string): ClientFrame {
  let json: unknown;
  try {
    json = JSON.parse(data);
  } catch {
    return malformed('malformed message: message frame data is not JSON');
  }
  const head = envelope.safeParse(json);
  if (!head.success) return malformed(describeIssue(head.error));
  const { type, id } = head.data;
  if (!ROOM_CLIENT_TYPES.has(type)) {
    // The SDK's own requests (send-text, client-message, ...): refused with the RTVI error reply
    // its message dispatcher expects, instead of ending a conversation over a feature.
    return {
      kind: 'refused',
      reply: JSON.stringify({
        label: RTVI_LABEL,
        type: 'error-response',
        id,
        data: { error: `${type} is not supported by this server` },
      }),
    };
  }
  const parsed = clientMessage.safeParse(json);
  if (!parsed.success) return malformed(describeIssue(parsed.error));
  return { kind: 'message', message: parsed.data };
}

export const pipecatWire: RoomWire = {
  name: 'pipecat-protobuf',
  playerRateHz: PIPECAT_PLAYER_RATE_HZ,
  // Pipecat bots end their pipeline on disconnect-bot; the SDK's disconnectBot() means that.
  disconnectBotEndsRoom: true,

  decode(bytes, isBinary) {
    if (!isBinary)
      return malformed('malformed message: a text message on a socket that speaks Pipecat protobuf frames');
    let frame: Frame;
    try {
      frame = Frame.fromBinary(bytes, { readUnknownField: false });
    } catch (err) {
      return malformed(`malformed message: not a Pipecat protobuf frame (${(err as Error).message})`);
    }
    switch (frame.frame.oneofKind) {
      case 'audio':
        return decodeAudio(frame.frame.audio);
      case 'message':
        return decodeRtviMessage(frame.frame.message.data);
      case undefined:
        return malformed('malformed message: a Pipecat frame of no known kind');
      default:
        return malformed(
          `malformed message: ${frame.frame.oneofKind} frames are not accepted; send RTVI messages in message frames`,
        );
    }
  },

  encodeMessage(json) {
    return Frame.toBinary(Frame.create({ frame: { oneofKind: 'message', message: { data: json } } }));
  },

  encodeAudio(pcm, sampleRateHz) {
    const audio = new Uint8Array(pcm.buffer, pcm.byteOffset, pcm.byteLength);
    return Frame.toBinary(
      Frame.create({
        frame: {
          oneofKind: 'audio',
          audio: { id: 0n, name: 'audio', audio, sampleRate: sampleRateHz, numChannels: 1 },
        },
      }),
    );
  },
};
