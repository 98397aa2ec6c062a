import type { FunctionCallResultMessage } from './room-messages.js';
import type { RoomInput, RoomListener } from './room-transport.js';

/**
 * A browser in a room, whatever carries it: the room socket (`BrowserParticipant`) or a WebRTC
 * peer connection (`rooms/webrtc/`). The room speaks RTVI to it and mixes its microphone in.
 */
export interface RoomParticipant extends RoomListener {
  /** client-ready arrived: the bot's audio and messages may flow. */
  readonly ready: boolean;
  /** The room's mixer input for this participant's audio. */
  connectInput(input: RoomInput): void;
  /** Sends an RTVI message (JSON text). */
  send(message: string): void;
  /** Ends this participant's connection, saying why (`code` is a room close code). */
  close(code: number, reason: string): void;
}

/** What the room learns from a participant. */
export interface ParticipantEvents {
  /** client-ready arrived: audio may flow now. */
  onReady(participant: RoomParticipant): void;
  onImage(imageBase64: string): void;
  /** A Pipecat client asked the bot to leave (disconnect-bot): the room ends. */
  onDisconnectBot(participant: RoomParticipant): void;
  /** The client answered a function call it was asked (llm-function-call-result). */
  onFunctionCallResult(participant: RoomParticipant, message: FunctionCallResultMessage): void;
  /** The connection closed, from either side. Called once. */
  onGone(participant: RoomParticipant, reason: string): void;
}
