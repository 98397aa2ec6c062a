import type { ProviderSettings } from '../../registry.js';
import { FliteTts } from './flite-tts.js';
import { DEFAULT_FLITE_VOICE } from './flite-voices.js';

export { FliteTts } from './flite-tts.js';

/** Builds the `flite` TTS: `config` option voice (default kal, 8 kHz); no key, no network. */
export function createFliteTts(settings: ProviderSettings): FliteTts {
  const voice = typeof settings.options.voice === 'string' ? settings.options.voice : DEFAULT_FLITE_VOICE;
  return new FliteTts(voice);
}
