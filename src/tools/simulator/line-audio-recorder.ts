import { ByteLog } from '../../audio/byte-log.js';
import { MULAW_FRAME_BYTES, MULAW_SILENCE_BYTE, TELEPHONY_SAMPLE_RATE_HZ } from '../../audio/frames.js';
import { decodeMulaw } from '../../audio/mulaw.js';
import { encodePcm16Wav } from '../../audio/wav.js';

/**
 * Both sides of the call as the line carried them, one 20 ms frame per clock tick from stream
 * start, so the two tracks share a timeline: the bot track is silence wherever nothing played.
 */
export class CallRecorder {
  private readonly caller = new ByteLog(RECORDING_START_BYTES);
  private readonly bot = new ByteLog(RECORDING_START_BYTES);
  private readonly padding = new Uint8Array(MULAW_FRAME_BYTES).fill(MULAW_SILENCE_BYTE);

  /** One tick: the caller's frame, and the first `botBytes` of `botFrame` (padded with silence). */
  appendTick(callerFrame: Uint8Array, botFrame: Uint8Array, botBytes: number): void {
    this.caller.append(callerFrame, MULAW_FRAME_BYTES);
    if (botBytes > 0) this.bot.append(botFrame, botBytes);
    if (botBytes < MULAW_FRAME_BYTES) this.bot.append(this.padding, MULAW_FRAME_BYTES - botBytes);
  }

  get durationMs(): number {
    return (this.caller.length * 1000) / TELEPHONY_SAMPLE_RATE_HZ;
  }

  callerMulaw(): Uint8Array {
    return this.caller.view();
  }

  botMulaw(): Uint8Array {
    return this.bot.view();
  }

  /** What the caller heard: mono 8 kHz 16-bit WAV. */
  botWav(): Uint8Array {
    return encodePcm16Wav(decodeMulaw(this.bot.view()), TELEPHONY_SAMPLE_RATE_HZ);
  }

  callerWav(): Uint8Array {
    return encodePcm16Wav(decodeMulaw(this.caller.view()), TELEPHONY_SAMPLE_RATE_HZ);
  }

  /** Caller on the left, bot on the right: overlaps (barge-in, late audio) are easy to see. */
  stereoWav(): Uint8Array {
    const caller = decodeMulaw(this.caller.view());
    const bot = decodeMulaw(this.bot.view());
    const frames = Math.min(caller.length, bot.length);
    const interleaved = new Int16Array(frames * 2);
    for (let i = 0; i < frames; i++) {
      interleaved[2 * i] = caller[i]!;
      interleaved[2 * i + 1] = bot[i]!;
    }
    // The audio module writes mono only; its canonical 44-byte header is patched to 2 channels
    // (channels at byte 22, byte rate at 28, block align at 32) rather than keeping a second writer.
    const wav = encodePcm16Wav(interleaved, TELEPHONY_SAMPLE_RATE_HZ);
    const view = new DataView(wav.buffer, wav.byteOffset, wav.byteLength);
    view.setUint16(22, 2, true);
    view.setUint32(28, TELEPHONY_SAMPLE_RATE_HZ * 4, true);
    view.setUint16(32, 4, true);
    return wav;
  }
}

/** Each track starts with room for 8 s of mu-law and doubles as the call goes on. */
const RECORDING_START_BYTES = 64 * 1024;
