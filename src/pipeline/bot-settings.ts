import type { ChatMessage, ConfigEntry, TelephonyConfigBody } from '../bots/bot-config-schema.js';
import { DEFAULT_VAD_ANALYZER_PARAMS, type VadAnalyzerParams } from '../vad/vad-analyzer.js';

/** Silero VAD parameters (confidence, start_secs, stop_secs, min_volume); see vad/vad-analyzer.ts. */
export type VadParams = VadAnalyzerParams;

export const DEFAULT_VAD_PARAMS: VadParams = { ...DEFAULT_VAD_ANALYZER_PARAMS };

/** A bot's per-service options, with `config` entries applied in order (later wins). */
export interface BotSettings {
  vad: VadParams;
  stt: Record<string, unknown>;
  llm: Record<string, unknown>;
  tts: Record<string, unknown>;
  initialMessages: ChatMessage[];
  runOnConfig: boolean;
  maxDurationSecs: number;
}

export function botSettings(body: Pick<TelephonyConfigBody, 'config' | 'max_duration'>): BotSettings {
  const vad: VadParams = { ...DEFAULT_VAD_PARAMS };
  const byService: Record<'stt' | 'llm' | 'tts', Record<string, unknown>> = { stt: {}, llm: {}, tts: {} };
  for (const entry of body.config as ConfigEntry[]) {
    for (const option of entry.options) {
      if (entry.service === 'vad') {
        if (option.name === 'params') Object.assign(vad, option.value as Partial<VadParams>);
        else (vad as unknown as Record<string, unknown>)[option.name] = option.value;
      } else {
        byService[entry.service][option.name] = option.value;
      }
    }
  }
  return {
    vad,
    stt: byService.stt,
    llm: byService.llm,
    tts: byService.tts,
    initialMessages: (byService.llm.initial_messages as ChatMessage[] | undefined) ?? [],
    runOnConfig: byService.llm.run_on_config === true,
    maxDurationSecs: body.max_duration,
  };
}
