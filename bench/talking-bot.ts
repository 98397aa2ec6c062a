import { createBotConfig, scrapeMetrics, type ServerProcess } from './server-process.js';

/**
 * The bot the cost benches call (cost-ab.ts, profile.ts, peers.ts, memory.ts): the pipeline (Deepgram STT, OpenAI LLM,
 * Cartesia TTS) or, with `s2s`, OpenAI Realtime, with every vendor at the emulators, and the
 * server's resident memory while it waits for calls.
 */

/** The server's environment that sends every vendor the talking bot uses to `vendorsUrl`. */
export function talkingBotVendors(vendorsUrl: string): Record<string, string> {
  return {
    SWITCHBOARD_DEEPGRAM_URL: vendorsUrl,
    SWITCHBOARD_OPENAI_URL: vendorsUrl,
    SWITCHBOARD_CARTESIA_URL: vendorsUrl,
  };
}

/** The talking bot's configuration (the body of POST /v1/bots/configs). */
export function talkingBotConfig(s2s: boolean): Record<string, unknown> {
  const llm = {
    service: 'llm',
    options: [
      { name: 'initial_messages', value: [{ role: 'system', content: 'You are a host.' }] },
      { name: 'run_on_config', value: true },
    ],
  };
  return s2s
    ? {
        bot_profile: 'openai_realtime_beta_2024_10',
        services: { llm: 'openai_realtime' },
        config: [llm],
        api_keys: { openai: 'bench' },
      }
    : {
        bot_profile: 'telephony_ws_voice_2024_09',
        services: { stt: 'deepgram', llm: 'openai', tts: 'cartesia' },
        config: [llm],
        api_keys: { deepgram: 'bench', openai: 'bench', cartesia: 'bench' },
      };
}

/**
 * Creates the talking bot on `server` and waits until the voice activity model is ready (the
 * configuration readies it); returns the media-stream URL a call dials.
 */
export async function configureTalkingBot(server: ServerProcess, s2s: boolean): Promise<string> {
  const id = await createBotConfig(server.baseUrl, talkingBotConfig(s2s));
  await server.logged('voice activity model ready');
  return `${server.baseUrl.replace(/^http/, 'ws')}/ws/twilio/${id}`;
}

/** The server's resident memory once it has been left alone for `settleMs` (none: at once). */
export async function settledRssBytes(baseUrl: string, settleMs: number): Promise<number> {
  if (settleMs > 0) await new Promise((resolve) => setTimeout(resolve, settleMs));
  return (await scrapeMetrics(baseUrl)).get('process_resident_memory_bytes') ?? 0;
}
