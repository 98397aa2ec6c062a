import { type Socket, connect } from 'node:net';
import { createEmulators } from '../../src/cli/emulate.js';
import { type RunningEmulators, startEmulatorServer } from '../../src/tools/emulators/emulator-server.js';
import {
  DEFAULT_EMULATOR_LATENCIES,
  type EmulatorLatencies,
  type VendorEmulator,
} from '../../src/tools/emulators/types.js';

/**
 * The vendor emulators as `switchboard emulate` builds and serves them, on a free port, for the
 * vendors' own SDKs to talk to. SDKs are pointed at `baseUrl`, which names the host `localhost`
 * (not an IP literal) as a user's configuration would.
 */

export const API_KEY = 'contract-test-key';

/** Quick enough for tests, still paced: first token/byte after a few ms, audio at 20x real time. */
export const CONTRACT_LATENCIES: EmulatorLatencies = {
  ...DEFAULT_EMULATOR_LATENCIES,
  sttFinalDelayMs: 20,
  llmFirstTokenMs: 10,
  llmTokensPerSec: 500,
  ttsFirstByteMs: 10,
  ttsRealTimeFactor: 20,
};

export interface Vendors {
  running: RunningEmulators;
  emulators: VendorEmulator[];
  port: number;
  /** http://localhost:<port> */
  baseUrl: string;
  /** The emulator of a class, to read what it recorded. */
  emulator<T extends VendorEmulator>(type: abstract new (...args: never[]) => T): T;
  /**
   * A plain TCP connection to the emulators, for SDKs that force `wss://` onto any base URL:
   * given to `ws` as `createConnection`, it replaces the TLS connection the URL asks for.
   */
  plainSocket(): Socket;
  close(): Promise<void>;
}

export async function startVendors(
  options: { transcripts?: string[]; replies?: string[]; emulators?: VendorEmulator[] } = {},
): Promise<Vendors> {
  const emulators =
    options.emulators ??
    createEmulators({
      latencies: CONTRACT_LATENCIES,
      transcripts: options.transcripts ?? ['hello'],
      replies: options.replies ?? [],
      apiKey: API_KEY,
    });
  const running = await startEmulatorServer(emulators, { port: 0, host: '127.0.0.1' });
  const port = Number(new URL(running.url).port);
  return {
    running,
    emulators,
    port,
    baseUrl: `http://localhost:${port}`,
    emulator<T extends VendorEmulator>(type: abstract new (...args: never[]) => T): T {
      const found = emulators.find((e): e is T => e instanceof type);
      if (!found) throw new Error(`no ${type.name} is running`);
      return found;
    },
    plainSocket: () => connect({ host: 'localhost', port }),
    close: () => running.close(),
  };
}
