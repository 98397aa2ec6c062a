import { decodeMulaw, encodeMulaw } from '../audio/mulaw.js';
import type { CallStart, CallTransport, CallTransportHandler } from '../pipeline/call-transport.js';
import type { RoomInput, RoomListener } from './room-transport.js';

/**
 * A phone call in a room (a dial-in caller handed over by POST /v1/bots/start, or a dial-out
 * callee who answered): the caller's
 * frames go into the room's mix, the bot's frames go out on the carrier's stream as they come.
 * The room's own clock answers the bot's marks, so the carrier's echoed marks are not needed.
 */
export class PhoneLeg implements RoomListener, CallTransportHandler {
  private input: RoomInput | undefined;
  private readonly pcm = new Int16Array(160);

  constructor(
    readonly transport: CallTransport,
    private readonly onDigit: (digit: string) => void,
    private readonly onHangUp: (leg: PhoneLeg, reason: string) => void,
    /** Called when the leg's stream starts, for legs that join only then (dial-out callees). */
    private readonly onStarted?: (leg: PhoneLeg) => void,
  ) {}

  connectInput(input: RoomInput): void {
    this.input = input;
  }

  onStart(_start: CallStart): void {
    this.onStarted?.(this);
  }

  onAudio(mulaw: Uint8Array): void {
    if (this.pcm.length !== mulaw.length) {
      this.input?.push(decodeMulaw(mulaw));
      return;
    }
    this.input?.push(decodeMulaw(mulaw, this.pcm));
  }

  onDtmf(digit: string): void {
    this.onDigit(digit);
  }

  onMark(): void {}

  onEnd(reason: string): void {
    this.onHangUp(this, reason);
  }

  playBotAudio(pcm8k: Int16Array): void {
    this.transport.sendMedia(encodeMulaw(pcm8k));
  }

  clearBotAudio(): void {
    this.transport.sendClear();
  }
}
