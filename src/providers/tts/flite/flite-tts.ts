import type { ProviderContext, TtsOutput, TtsProvider } from '../../types.js';
import type { AudioFormat } from '../../../audio/audio-format.js';
import { synthesizeFliteInWorker } from './flite-worker-client.js';
import { DEFAULT_FLITE_VOICE, fliteVoiceSampleRateHz } from './flite-voices.js';

/**
 * Offline TTS (Flite, compiled to WASI): no account, no network. Robotic but instant, so it is
 * the bot's voice for demos and load tests, and the fallback that still apologises when a
 * vendor's TTS fails. Speaks piece by piece, in a worker thread; each piece's audio is followed
 * by its text.
 */
export class FliteTts implements TtsProvider {
  readonly name = 'flite';
  readonly outputFormat: AudioFormat;

  /** Throws for an unknown voice. The default, kal, speaks 8 kHz: telephony needs no resampling. */
  constructor(private readonly voice = DEFAULT_FLITE_VOICE) {
    this.outputFormat = { encoding: 'linear16', sampleRateHz: fliteVoiceSampleRateHz(voice) };
  }

  async *synthesize(text: AsyncIterable<string>, ctx: ProviderContext): AsyncIterable<TtsOutput> {
    for await (const piece of text) {
      if (ctx.signal.aborted) return;
      const result = await synthesizeFliteInWorker(piece, { voice: this.voice, signal: ctx.signal });
      if (ctx.signal.aborted) return;
      if (result.sampleRateHz !== this.outputFormat.sampleRateHz) {
        throw new Error(
          `flite voice ${this.voice} speaks ${result.sampleRateHz} Hz, expected ${this.outputFormat.sampleRateHz} Hz`,
        );
      }
      const samples = result.samples;
      yield { type: 'audio', audio: new Uint8Array(samples.buffer, samples.byteOffset, samples.byteLength) };
      yield { type: 'spoken', text: piece };
    }
  }
}
