import WebSocket, { type RawData } from 'ws';
import { TELEPHONY_SAMPLE_RATE_HZ, VENDOR_AUDIO_MESSAGE_MULAW_BYTES } from '../../audio/frames.js';
import { mulawByteToLinear } from '../../audio/mulaw.js';
import { type ProviderContext, ProviderError } from '../types.js';
import { isRetryableCloseCode, oneLine } from '../vendor-errors.js';
import type { S2sEvents } from './types.js';
import { CLOSE } from '../../shared/close-codes.js';

/**
 * What the speech-to-speech sessions share once their vendor's websocket is open: it is closed
 * when the call ends (ctx.signal) or the session is closed, and a close nobody asked for is
 * reported once, as the session lost. Subclasses read the vendor's messages and wrap the caller's
 * audio in the vendor's message.
 *
 * The caller's 20 ms frames go out in pairs, as 40 ms messages (VENDOR_AUDIO_MESSAGE_MS says
 * why), except where the vendor's own VAD decides: it starts the caller's turn (and cuts the bot)
 * on the first frames of speech and ends it (and starts its answer) on the frame that completes its
 * silence_duration_ms, and a frame waiting for its pair would delay either by 20 ms. So around
 * those edges, judged by each frame's level, every frame goes out at once, on its own or with the
 * ones waiting: the first EDGE_SPEECH_FRAMES of speech after a pause, and the first
 * EDGE_QUIET_FRAMES of quiet after speech (which covers silence_duration_ms up to that long).
 * Past those edges, quiet (a caller listening to the bot, most of a call) goes in
 * QUIET_MESSAGE_MS messages: nothing the vendor decides waits on it, since the first frame of
 * speech is an edge and takes the quiet waiting before it along at once.
 */
/** Frames of 20 ms: 300 ms of speech after a pause, 1.2 s of quiet after speech. */
const EDGE_SPEECH_FRAMES = 15;
const EDGE_QUIET_FRAMES = 60;
/** A pause this long makes the next speech a new onset to the vendor's VAD (less than its 500 ms default). */
const ONSET_AFTER_QUIET_FRAMES = 15;
/** Mean square of a frame's samples at or above which it counts as speech: RMS 150, about -47 dBFS. */
const SPEECH_MEAN_SQUARE = 150 * 150;
/**
 * Quiet past the edges goes in messages this long (8 kHz mu-law bytes): 100 ms, a fifth of the
 * messages of per-frame sending and two fifths of pairs. Speech the vendor's VAD would hear
 * below SPEECH_MEAN_SQUARE would reach it up to 80 ms later than in pairs; no louder speech does.
 */
const QUIET_MESSAGE_MS = 100;
const QUIET_MESSAGE_MULAW_BYTES = (TELEPHONY_SAMPLE_RATE_HZ * QUIET_MESSAGE_MS) / 1000;
/** Squared linear sample of each mu-law byte. */
const SQUARED_SAMPLE = Float64Array.from({ length: 256 }, (_, code) => mulawByteToLinear(code) ** 2);
export abstract class S2sSocketSession {
  private closedByUs = false;
  /** Caller audio not yet sent (copies: the transport lends a frame only for the call), and its bytes. */
  private waiting: Uint8Array[] = [];
  private waitingBytes = 0;
  /** Frames of speech since the current utterance began, and of quiet since the last speech. */
  private speechFrames = 0;
  private quietFrames = Number.POSITIVE_INFINITY;

  protected constructor(
    protected readonly ws: WebSocket,
    protected readonly provider: string,
    protected readonly ctx: ProviderContext,
    protected readonly events: S2sEvents,
  ) {
    ws.on('message', (data, isBinary) => this.onMessage(data, isBinary));
    ws.on('close', (code, reason) => {
      if (this.closedByUs || ctx.signal.aborted) return;
      const detail = reason.length > 0 ? `: ${oneLine(reason.toString())}` : '';
      events.onError(
        new ProviderError(
          provider,
          `the connection closed mid-call (code ${code}${detail})`,
          isRetryableCloseCode(code),
        ),
      );
    });
    // Errors after the handshake are followed by 'close', which is what the session acts on.
    ws.on('error', (err) => ctx.log.debug({ provider, err }, 'speech-to-speech socket error'));
    ctx.signal.addEventListener('abort', () => void this.close(), { once: true });
  }

  protected abstract onMessage(data: RawData, isBinary: boolean): void;

  /** Caller audio, 8 kHz mu-law, in the vendor's audio message. */
  protected abstract sendAudioMessage(mulaw: Uint8Array): void;

  /** One 20 ms frame of the caller (see S2sSession.sendAudio). */
  sendAudio(mulaw: Uint8Array): void {
    if (mulaw.length === 0) return;
    const limit = this.messageBytes(mulaw);
    if (this.waitingBytes === 0 && mulaw.length >= limit) {
      this.sendAudioMessage(mulaw);
      return;
    }
    this.waiting.push(mulaw.slice());
    this.waitingBytes += mulaw.length;
    if (this.waitingBytes >= limit) this.sendWaiting();
  }

  private sendWaiting(): void {
    const message = this.waiting.length === 1 ? this.waiting[0]! : Buffer.concat(this.waiting, this.waitingBytes);
    this.waiting = [];
    this.waitingBytes = 0;
    this.sendAudioMessage(message);
  }

  /**
   * How many bytes may wait, this frame included, before they go (see the class comment): none at
   * an edge, where the vendor's VAD may be deciding; a pair in speech; QUIET_MESSAGE_MS in quiet.
   */
  private messageBytes(mulaw: Uint8Array): number {
    let sum = 0;
    for (let i = 0; i < mulaw.length; i++) sum += SQUARED_SAMPLE[mulaw[i]!]!;
    if (sum / mulaw.length >= SPEECH_MEAN_SQUARE) {
      if (this.quietFrames >= ONSET_AFTER_QUIET_FRAMES) this.speechFrames = 0;
      this.speechFrames += 1;
      this.quietFrames = 0;
      return this.speechFrames <= EDGE_SPEECH_FRAMES ? 0 : VENDOR_AUDIO_MESSAGE_MULAW_BYTES;
    }
    this.quietFrames += 1;
    return this.speechFrames > 0 && this.quietFrames <= EDGE_QUIET_FRAMES ? 0 : QUIET_MESSAGE_MULAW_BYTES;
  }

  async close(): Promise<void> {
    if (this.closedByUs) return;
    this.closedByUs = true;
    if (this.ws.readyState === WebSocket.OPEN) this.ws.close(CLOSE.normal);
    else this.ws.terminate();
  }

  /** Sends a JSON event; nothing once the socket is no longer open (the close reports the loss). */
  protected send(message: Record<string, unknown>): void {
    if (this.ws.readyState === WebSocket.OPEN) this.ws.send(JSON.stringify(message));
  }
}
