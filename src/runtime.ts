import type { CallVadFactory } from './pipeline/call-vad.js';
import { PlayoutClock } from './pipeline/playout.js';
import { EchoLlm } from './providers/llm/echo/echo-llm.js';
import { ProviderRegistry } from './providers/registry.js';
import { FliteTts, createFliteTts } from './providers/tts/flite/flite-tts.js';
import type { TtsProvider } from './providers/types.js';
import { createSileroCallVad } from './vad/silero-call-vad.js';

/** What calls run on: providers by name, the VAD, the offline fallback voice, the playout clock. */
export interface CallRuntime {
  registry: ProviderRegistry;
  createVad: CallVadFactory;
  fallbackTts: () => TtsProvider;
  clock: PlayoutClock;
}

/** The providers every build has: the ones that need no account. */
export function builtinRegistry(): ProviderRegistry {
  return new ProviderRegistry().registerLlm('echo', () => new EchoLlm()).registerTts('flite', createFliteTts);
}

export function defaultRuntime(registry: ProviderRegistry = builtinRegistry()): CallRuntime {
  return {
    registry,
    createVad: createSileroCallVad,
    fallbackTts: () => new FliteTts(),
    clock: new PlayoutClock(),
  };
}
