import type { ChatMessage, ConfigEntry, TelephonyConfigBody } from '../bots/bot-config-schema.js';
import { DEFAULT_VAD_ANALYZER_PARAMS, type VadAnalyzerParams } from '../vad/vad-analyzer.js';

/** Silero VAD parameters (confidence, start_secs, stop_secs, min_volume); see vad/vad-analyzer.ts. */
export type VadParams = VadAnalyzerParams;

export const DEFAULT_VAD_PARAMS: VadParams = { ...DEFAULT_VAD_ANALYZER_PARAMS };

/**
 * How the caller's speech over the bot stops it. `instant`: the bot goes quiet at the first VAD
 * window of plausible speech and resumes from the first unheard word if it was not speech;
 * `confirmed`: it goes on until start_secs of speech (and `minWords`) confirm an interruption.
 */
export interface InterruptionSettings {
  mode: 'instant' | 'confirmed';
  /** Words interim transcripts must show before speech cancels the reply (0: VAD alone); unset, the turn policy's. */
  minWords?: number;
  turnPolicy: 'default' | 'natural_conversation';
}

/** Phone callers interrupt to be heard: stop at once (instant) and cancel on VAD alone, as the bot always has (README: Barge-in). */
export const DEFAULT_INTERRUPTION: Readonly<InterruptionSettings> = Object.freeze({
  mode: 'instant',
  turnPolicy: 'default',
});

/** A bot's per-service options, with `config` entries applied in order (later wins). */
export interface BotSettings {
  vad: VadParams;
  interruption: InterruptionSettings;
  stt: Record<string, unknown>;
  llm: Record<string, unknown>;
  tts: Record<string, unknown>;
  initialMessages: ChatMessage[];
  runOnConfig: boolean;
  maxDurationSecs: number;
}

export function botSettings(body: Pick<TelephonyConfigBody, 'config' | 'max_duration'>): BotSettings {
  const vad: VadParams = { ...DEFAULT_VAD_PARAMS };
  const interruption: InterruptionSettings = { ...DEFAULT_INTERRUPTION };
  const byService: Record<'stt' | 'llm' | 'tts', Record<string, unknown>> = { stt: {}, llm: {}, tts: {} };
  for (const entry of body.config as ConfigEntry[]) {
    for (const option of entry.options) {
      if (entry.service === 'interruption') {
        if (option.name === 'mode') interruption.mode = option.value as InterruptionSettings['mode'];
        else if (option.name === 'min_words') interruption.minWords = option.value as number;
        else if (option.name === 'turn_policy')
          interruption.turnPolicy = option.value as InterruptionSettings['turnPolicy'];
      } else if (entry.service === 'vad') {
        if (option.name === 'params') Object.assign(vad, option.value as Partial<VadParams>);
        else (vad as unknown as Record<string, unknown>)[option.name] = option.value;
      } else {
        byService[entry.service][option.name] = option.value;
      }
    }
  }
  return {
    vad,
    interruption,
    stt: byService.stt,
    llm: byService.llm,
    tts: byService.tts,
    initialMessages: (byService.llm.initial_messages as ChatMessage[] | undefined) ?? [],
    runOnConfig: byService.llm.run_on_config === true,
    maxDurationSecs: body.max_duration,
  };
}
