import WebSocket, { type RawData } from 'ws';
import { CallerAudioMessages } from '../../audio/caller-audio-messages.js';
import { type ProviderContext, ProviderError } from '../types.js';
import { isRetryableCloseCode, oneLine } from '../vendor-errors.js';
import type { S2sEvents } from './types.js';
import { CLOSE } from '../../shared/close-codes.js';

/**
 * What the speech-to-speech sessions share once their vendor's websocket is open: it is closed
 * when the call ends (ctx.signal) or the session is closed, and a close nobody asked for is
 * reported once, as the session lost. Subclasses read the vendor's messages and wrap the caller's
 * audio in the vendor's message; the caller's frames are cut into messages by CallerAudioMessages,
 * with the frames at the edges of speech sent at once: the vendor's own VAD starts the caller's
 * turn (and cuts the bot) on the first frames of speech and ends it (and starts its answer) on
 * the frame that completes its silence_duration_ms.
 */
export abstract class S2sSocketSession {
  private closedByUs = false;
  private readonly callerAudio = new CallerAudioMessages((mulaw) => this.sendAudioMessage(mulaw), true);

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

  /** The vendor's VAD ended the caller's utterance (see CallerAudioMessages.vendorEndedSpeech). */
  protected vendorEndedSpeech(): void {
    this.callerAudio.vendorEndedSpeech();
  }

  /** One 20 ms frame of the caller (see S2sSession.sendAudio). */
  sendAudio(mulaw: Uint8Array): void {
    this.callerAudio.push(mulaw);
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
