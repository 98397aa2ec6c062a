import { type ClientMessage, clientMessage } from './room-messages.js';

/** One message from a room client, whatever the wire format. */
export type ClientFrame =
  | { kind: 'message'; message: ClientMessage }
  /** Mono 16-bit PCM; `sampleRateHz` undefined means the rate the client declared in client-ready. */
  | { kind: 'audio'; pcm: Int16Array; sampleRateHz: number | undefined }
  /** A well-formed request the room does not serve: answer with `reply` (an RTVI message) and carry on. */
  | { kind: 'refused'; reply: string }
  | { kind: 'malformed'; reason: string };

/**
 * How a room socket's messages are framed. The room speaks RTVI either way; the wire decides how
 * messages and audio are carried, and at what rate the client plays the bot.
 */
export interface RoomWire {
  readonly name: 'json' | 'pipecat-protobuf';
  decode(bytes: Buffer, isBinary: boolean): ClientFrame;
  /** An RTVI message (JSON text) as this wire sends it. */
  encodeMessage(json: string): string | Uint8Array;
  /** Mono 16-bit PCM of the bot at `sampleRateHz`, as this wire sends it. */
  encodeAudio(pcm: Int16Array, sampleRateHz: number): Uint8Array;
  /** The rate the client plays the bot at; undefined: the rate it declared in client-ready. */
  readonly playerRateHz: number | undefined;
  /** `disconnect-bot` ends the room (the bot leaves) rather than letting this participant go. */
  readonly disconnectBotEndsRoom: boolean;
}

/** Copies little-endian 16-bit samples out of `bytes` (a socket buffer may start at an odd offset). */
export function pcm16FromBytes(bytes: Uint8Array): Int16Array {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const samples = new Int16Array(bytes.byteLength >> 1);
  for (let i = 0; i < samples.length; i++) samples[i] = view.getInt16(i * 2, true);
  return samples;
}

/** Zod's first complaint as a close reason: the path, then the message. */
export function describeIssue(error: { issues: ReadonlyArray<{ path: PropertyKey[]; message: string }> }): string {
  const issue = error.issues[0];
  const where = issue && issue.path.length > 0 ? `${issue.path.map(String).join('.')}: ` : '';
  return `malformed message: ${where}${issue?.message ?? 'invalid'}`;
}

/**
 * The built-in page's wire: RTVI messages as JSON text frames, audio as bare binary frames of
 * 16-bit PCM at the rate declared in client-ready, in both directions.
 */
export const jsonWire: RoomWire = {
  name: 'json',
  playerRateHz: undefined,
  disconnectBotEndsRoom: false,
  decode(bytes, isBinary) {
    if (isBinary) {
      if (bytes.length % 2 !== 0)
        return { kind: 'malformed', reason: 'malformed message: audio must be 16-bit PCM (an even number of bytes)' };
      return { kind: 'audio', pcm: pcm16FromBytes(bytes), sampleRateHz: undefined };
    }
    let json: unknown;
    try {
      json = JSON.parse(bytes.toString('utf8'));
    } catch {
      return { kind: 'malformed', reason: 'malformed message: not JSON' };
    }
    const parsed = clientMessage.safeParse(json);
    if (!parsed.success) return { kind: 'malformed', reason: describeIssue(parsed.error) };
    if (parsed.data.type === 'client-ready' && !parsed.data.data.audio) {
      return {
        kind: 'malformed',
        reason: 'malformed message: data.audio.sampleRateHz: the rate of the audio you will send is required',
      };
    }
    return { kind: 'message', message: parsed.data };
  },
  encodeMessage: (json) => json,
  encodeAudio: (pcm) => Buffer.from(pcm.buffer, pcm.byteOffset, pcm.byteLength),
};
