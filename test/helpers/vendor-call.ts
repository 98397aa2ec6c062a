import { afterEach } from 'vitest';
import type { CartesiaEmulator } from '../../src/tools/emulators/cartesia-emulator.js';
import type { DeepgramEmulator } from '../../src/tools/emulators/deepgram-emulator.js';
import { type RunningEmulators, startEmulatorServer } from '../../src/tools/emulators/emulator-server.js';
import type { OpenAiEmulator } from '../../src/tools/emulators/openai-emulator.js';
import { type CallServer, startCallServer } from './call-server.js';

export interface VendorCallOptions {
  deepgram: DeepgramEmulator;
  openai: OpenAiEmulator;
  cartesia: CartesiaEmulator;
  /** The bot's system message. */
  instructions: string;
  /** The bot greets first (`run_on_config`); true unless said otherwise. */
  greets?: boolean;
  /** The VAD's `stop_secs`, when not the profile's. */
  vadStopSecs?: number;
  serviceOptions?: Record<string, Record<string, unknown>>;
  /** Reach the emulators by host name, as a real vendor is, rather than by IP literal. */
  byHostName?: boolean;
  captureLogs?: boolean;
}

/**
 * Phone calls to a bot on Deepgram, OpenAI and Cartesia, played by the emulators the test made
 * (so it can script and inspect them): `start` serves them, starts a server pointed at them with
 * a configuration using all three, and returns the configuration's stream address. Both are
 * closed after each test.
 */
export function vendorCalls(): (options: VendorCallOptions) => Promise<{ server: CallServer; wssUrl: string }> {
  let emulators: RunningEmulators | undefined;
  let server: CallServer | undefined;
  afterEach(async () => {
    await server?.close();
    await emulators?.close();
    server = undefined;
    emulators = undefined;
  });
  return async (options) => {
    emulators = await startEmulatorServer([options.deepgram, options.openai, options.cartesia]);
    const vendorUrl = options.byHostName ? emulators.url.replace('127.0.0.1', 'localhost') : emulators.url;
    server = await startCallServer(
      () => undefined,
      {
        SWITCHBOARD_DEEPGRAM_URL: vendorUrl,
        SWITCHBOARD_OPENAI_URL: vendorUrl,
        SWITCHBOARD_CARTESIA_URL: vendorUrl,
      },
      { captureLogs: options.captureLogs ?? false },
    );
    const { wssUrl } = await server.createConfig({
      services: { stt: 'deepgram', llm: 'openai', tts: 'cartesia' },
      config: [
        ...(options.vadStopSecs === undefined
          ? []
          : [{ service: 'vad', options: [{ name: 'params', value: { stop_secs: options.vadStopSecs } }] }]),
        {
          service: 'llm',
          options: [
            { name: 'initial_messages', value: [{ role: 'system', content: options.instructions }] },
            { name: 'run_on_config', value: options.greets ?? true },
          ],
        },
      ],
      api_keys: { deepgram: 'dg-key', openai: 'sk-key', cartesia: 'car-key' },
      ...(options.serviceOptions ? { service_options: options.serviceOptions } : {}),
    });
    return { server, wssUrl };
  };
}
