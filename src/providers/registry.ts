import type { S2sProvider } from './s2s/types.js';
import type { LlmProvider, SttProvider, TtsProvider } from './types.js';

/** What a provider factory gets: the bot's options for its service, its key, and vendor extras. */
export interface ProviderSettings {
  /** `config` options of this service kind, by name (model, voice, language, ...). */
  options: Record<string, unknown>;
  /** From the bot's api_keys, else `<VENDOR>_API_KEY`; undefined when neither is set. */
  apiKey: string | undefined;
  /** `service_options.<provider>`. */
  serviceOptions: Record<string, unknown>;
  /** The server's environment: `<VENDOR>_API_KEY` fallbacks and `SWITCHBOARD_<VENDOR>_URL` overrides. */
  env: Readonly<Record<string, string | undefined>>;
}

export type Factory<T> = (settings: ProviderSettings) => T;

/** The kinds of provider: the pipeline's three, and speech-to-speech vendors that are all three at once. */
export type ProviderKind = 'stt' | 'llm' | 'tts' | 's2s';

/**
 * Providers by name, per service kind. The server registers the built-in ones; tests register
 * scripted providers under their own names. A speech-to-speech vendor is registered under its
 * own name too; which bot profile runs on it is the product's choice (pipeline/provider-settings.ts).
 */
export class ProviderRegistry {
  private readonly stt = new Map<string, Factory<SttProvider>>();
  private readonly llm = new Map<string, Factory<LlmProvider>>();
  private readonly tts = new Map<string, Factory<TtsProvider>>();
  private readonly s2s = new Map<string, Factory<S2sProvider>>();

  registerStt(name: string, factory: Factory<SttProvider>): this {
    this.stt.set(name, factory);
    return this;
  }

  registerLlm(name: string, factory: Factory<LlmProvider>): this {
    this.llm.set(name, factory);
    return this;
  }

  registerTts(name: string, factory: Factory<TtsProvider>): this {
    this.tts.set(name, factory);
    return this;
  }

  registerS2s(name: string, factory: Factory<S2sProvider>): this {
    this.s2s.set(name, factory);
    return this;
  }

  names(kind: ProviderKind): string[] {
    return [...this[kind].keys()];
  }

  has(kind: ProviderKind, name: string): boolean {
    return this[kind].has(name);
  }

  createStt(name: string, settings: ProviderSettings): SttProvider {
    return this.get(this.stt, 'stt', name)(settings);
  }

  createLlm(name: string, settings: ProviderSettings): LlmProvider {
    return this.get(this.llm, 'llm', name)(settings);
  }

  createTts(name: string, settings: ProviderSettings): TtsProvider {
    return this.get(this.tts, 'tts', name)(settings);
  }

  createS2s(name: string, settings: ProviderSettings): S2sProvider {
    return this.get(this.s2s, 's2s', name)(settings);
  }

  private get<T>(map: Map<string, Factory<T>>, kind: string, name: string): Factory<T> {
    const factory = map.get(name);
    if (!factory)
      throw new Error(
        `no ${kind} provider "${name}" is available in this build (available: ${[...map.keys()].join(', ') || 'none'})`,
      );
    return factory;
  }
}

/**
 * The vendor behind a provider name: `deepgram_tts` → `deepgram`, `openai_realtime` → `openai`.
 * `custom_llm` is a vendor of its own (CUSTOM_LLM_API_KEY).
 */
export function vendorOf(provider: string): string {
  return provider.replace(/_(tts|stt|realtime)$/, '');
}

/** The environment variable holding a vendor's key: `deepgram_tts` → `DEEPGRAM_API_KEY`. */
export function envKeyName(provider: string): string {
  return `${vendorOf(provider).toUpperCase()}_API_KEY`;
}
