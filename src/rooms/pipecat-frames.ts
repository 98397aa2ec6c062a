import { LongType, MessageType, ScalarType } from '@protobuf-ts/runtime';

/**
 * Pipecat's websocket frame format (`proto/frames.proto`, package `pipecat`), as reflection
 * message types: every websocket message of the Pipecat websocket transport is one binary `Frame`.
 * The field numbers mirror the published schema; the transport's own generated code is the
 * reference. Version 1.7 of `@pipecat-ai/websocket-transport` knows fields 1 to 4 of `Frame`
 * (no interruption frame), and fails on any other kind it receives, so the server sends only
 * audio and message frames.
 */

export interface TextFrame {
  id: bigint;
  name: string;
  text: string;
}

export interface AudioRawFrame {
  id: bigint;
  name: string;
  /** 16-bit little-endian PCM, channels interleaved. */
  audio: Uint8Array;
  sampleRate: number;
  numChannels: number;
  pts?: bigint;
}

export interface TranscriptionFrame {
  id: bigint;
  name: string;
  text: string;
  userId: string;
  timestamp: string;
}

/** An RTVI message (label "rtvi-ai") as JSON text. */
export interface MessageFrame {
  data: string;
}

export interface Frame {
  frame:
    | { oneofKind: 'text'; text: TextFrame }
    | { oneofKind: 'audio'; audio: AudioRawFrame }
    | { oneofKind: 'transcription'; transcription: TranscriptionFrame }
    | { oneofKind: 'message'; message: MessageFrame }
    | { oneofKind: undefined };
}

const id = { no: 1, name: 'id', kind: 'scalar', T: ScalarType.UINT64, L: LongType.BIGINT } as const;
const name = { no: 2, name: 'name', kind: 'scalar', T: ScalarType.STRING } as const;

export const TextFrame = new MessageType<TextFrame>('pipecat.TextFrame', [
  id,
  name,
  { no: 3, name: 'text', kind: 'scalar', T: ScalarType.STRING },
]);

export const AudioRawFrame = new MessageType<AudioRawFrame>('pipecat.AudioRawFrame', [
  id,
  name,
  { no: 3, name: 'audio', kind: 'scalar', T: ScalarType.BYTES },
  { no: 4, name: 'sample_rate', kind: 'scalar', T: ScalarType.UINT32 },
  { no: 5, name: 'num_channels', kind: 'scalar', T: ScalarType.UINT32 },
  { no: 6, name: 'pts', kind: 'scalar', opt: true, T: ScalarType.UINT64, L: LongType.BIGINT },
]);

export const TranscriptionFrame = new MessageType<TranscriptionFrame>('pipecat.TranscriptionFrame', [
  id,
  name,
  { no: 3, name: 'text', kind: 'scalar', T: ScalarType.STRING },
  { no: 4, name: 'user_id', kind: 'scalar', T: ScalarType.STRING },
  { no: 5, name: 'timestamp', kind: 'scalar', T: ScalarType.STRING },
]);

export const MessageFrame = new MessageType<MessageFrame>('pipecat.MessageFrame', [
  { no: 1, name: 'data', kind: 'scalar', T: ScalarType.STRING },
]);

export const Frame = new MessageType<Frame>('pipecat.Frame', [
  { no: 1, name: 'text', kind: 'message', oneof: 'frame', T: () => TextFrame },
  { no: 2, name: 'audio', kind: 'message', oneof: 'frame', T: () => AudioRawFrame },
  { no: 3, name: 'transcription', kind: 'message', oneof: 'frame', T: () => TranscriptionFrame },
  { no: 4, name: 'message', kind: 'message', oneof: 'frame', T: () => MessageFrame },
]);
