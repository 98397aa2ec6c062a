import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';

/**
 * Latencies an emulated vendor adds, so load tests can model real providers offline.
 * Every emulator reads the ones that apply to it.
 */
export interface EmulatorLatencies {
  /** STT: from the end of an utterance's audio to its final result. */
  sttFinalDelayMs: number;
  /** LLM: from the request to the first token. */
  llmFirstTokenMs: number;
  /** LLM: tokens streamed per second after the first. */
  llmTokensPerSec: number;
  /** TTS: from the text to the first audio byte. */
  ttsFirstByteMs: number;
  /** TTS: audio seconds produced per wall-clock second (2 = twice as fast as real time). */
  ttsRealTimeFactor: number;
}

export const DEFAULT_EMULATOR_LATENCIES: EmulatorLatencies = {
  sttFinalDelayMs: 150,
  llmFirstTokenMs: 300,
  llmTokensPerSec: 50,
  ttsFirstByteMs: 150,
  ttsRealTimeFactor: 4,
};

/**
 * A protocol-faithful stand-in for one vendor's API, mountable on a shared HTTP server: it
 * claims the requests and upgrades whose paths are its vendor's and ignores the rest.
 */
export interface VendorEmulator {
  readonly vendor: string;
  /** Returns true when it handled (or is handling) the request. */
  handleHttp?(req: IncomingMessage, res: ServerResponse): boolean;
  /** Returns true when it took over the websocket upgrade. */
  handleUpgrade?(req: IncomingMessage, socket: Duplex, head: Buffer): boolean;
  /** Closes the emulator's open sockets and timers. */
  close(): void;
}
