import { QuietMemory } from './lifecycle/quiet-memory.js';
import type { Logger } from './observability/logger.js';
import { loadTwimlBuilder } from './telephony/twiml.js';
import { warmSileroNetwork } from './vad/silero-network.js';
import { releaseYoungGeneration } from './young-generation.js';

let warming = false;

/**
 * Readies, in the background and once per process, what every call needs: the VAD's network
 * (its weights read from the model file, tens of ms) and the TwiML builder. A server nobody has
 * configured for calls should not pay for them, and the first call should not wait for them: the
 * server calls this when calls may come (see buildApp). From then on V8's young generation may
 * grow to the size calls run best with (young-generation.ts).
 *
 * What only some calls need loads when one first does: the offline voice on the first apology
 * (flite-worker-client.ts), the S3 SDK when the first call recording to a bucket starts
 * (recordings-service.ts).
 */
export function warmCallParts(log: Logger): void {
  if (warming) return;
  warming = true;
  releaseYoungGeneration();
  warmSileroNetwork().then(
    (loadMs) => {
      log.info({ loadMs: Math.round(loadMs) }, 'voice activity model ready');
      QuietMemory.afterStartUp();
    },
    (err: unknown) => log.error({ err }, 'voice activity model failed to load'),
  );
  // The answer to a call's webhook is TwiML: its builder loads now rather than on that webhook.
  loadTwimlBuilder();
}
