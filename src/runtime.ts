import { warmCallParts } from './call-parts-warm-up.js';
import type { Logger } from './observability/logger.js';
import type { CallVadFactory } from './vad/call-vad.js';
import { PlayoutClock } from './pipeline/playout.js';
import { type Clock, REAL_CLOCK } from './shared/clock.js';
import { createAnthropicLlm } from './providers/llm/anthropic/index.js';
import { createEchoLlm } from './providers/llm/echo/index.js';
import { createGeminiLlm } from './providers/llm/gemini/index.js';
import { OPENAI_COMPATIBLE_NAMES, openAiCompatibleFactory } from './providers/llm/openai/index.js';
import { ProviderRegistry } from './providers/registry.js';
import { createGeminiLive, createOpenAiRealtime } from './providers/s2s/index.js';
import { createDeepgramStt } from './providers/stt/deepgram/index.js';
import { createCartesiaTts } from './providers/tts/cartesia/index.js';
import { createDeepgramAuraTts } from './providers/tts/deepgram-aura/index.js';
import { createElevenLabsTts } from './providers/tts/elevenlabs/index.js';
import { FliteTts, createFliteTts } from './providers/tts/flite/index.js';
import { createOpenAiTts } from './providers/tts/openai-tts/index.js';
import type { TtsProvider } from './providers/types.js';
import { createSileroCallVad } from './vad/silero-call-vad.js';

/** What calls run on: providers by name, the VAD, the offline fallback voice, the call clock and the playout clock on it. */
export interface CallRuntime {
  registry: ProviderRegistry;
  createVad: CallVadFactory;
  fallbackTts: () => TtsProvider;
  /** The time calls run on (shared/clock.ts): wall time, or a scaled clock shared with the far end. */
  clock: Clock;
  /** The one timer every call's Playout is pumped by, on `clock`. */
  playoutClock: PlayoutClock;
  /** Readies what the calls need ahead of the first one, in the background (call-parts-warm-up.ts). */
  warm?: (log: Logger) => void;
}

/**
 * Every provider this build ships, by the names bot configurations use (docs/providers.md, "Names in a bot configuration"):
 * the vendors' adapters, plus `echo` and `flite`, which need no account and work offline.
 */
export function builtinRegistry(): ProviderRegistry {
  const registry = new ProviderRegistry()
    .registerStt('deepgram', createDeepgramStt)
    .registerLlm('echo', createEchoLlm)
    .registerLlm('anthropic', createAnthropicLlm)
    .registerLlm('gemini', createGeminiLlm)
    .registerTts('flite', createFliteTts)
    .registerTts('cartesia', createCartesiaTts)
    .registerTts('elevenlabs', createElevenLabsTts)
    .registerTts('deepgram_tts', createDeepgramAuraTts)
    .registerTts('openai_tts', createOpenAiTts)
    .registerS2s('openai_realtime', createOpenAiRealtime)
    .registerS2s('gemini_live', createGeminiLive);
  for (const name of OPENAI_COMPATIBLE_NAMES) registry.registerLlm(name, openAiCompatibleFactory(name));
  return registry;
}

/** `clock`: the time calls run on; wall time unless the far end (a simulator, emulators) runs on the same scaled clock. */
export function defaultRuntime(registry: ProviderRegistry = builtinRegistry(), clock: Clock = REAL_CLOCK): CallRuntime {
  return {
    registry,
    createVad: createSileroCallVad,
    fallbackTts: () => new FliteTts(),
    clock,
    playoutClock: new PlayoutClock(clock),
    warm: warmCallParts,
  };
}
