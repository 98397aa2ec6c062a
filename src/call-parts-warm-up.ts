import type { Logger } from './observability/logger.js';
import { warmFliteWorker } from './providers/tts/flite/flite-worker-client.js';
import { loadBucketSdk } from './recordings/bucket-storage.js';
import { loadTwimlBuilder } from './telephony/twiml.js';
import { warmSileroWorker } from './vad/silero-worker-runner.js';
import { releaseYoungGeneration } from './young-generation.js';

let warming = false;

/**
 * Readies, in the background and once per process, the heavy parts that calls need: the VAD model
 * (onnxruntime in the Silero worker thread), the offline voice that apologises when a vendor fails
 * (flite's WebAssembly in its worker) and the S3 SDK for recordings. Together about 150 MB and a
 * second of start-up, which a server nobody has configured for calls should not pay, and which the
 * first call should not wait for: the server calls this when calls may come (see buildApp).
 * From then on V8's young generation may grow to the size calls run best with (young-generation.ts).
 */
export function warmCallParts(log: Logger): void {
  if (warming) return;
  warming = true;
  releaseYoungGeneration();
  warmSileroWorker().then(
    (loadMs) => log.info({ loadMs: Math.round(loadMs) }, 'voice activity model ready'),
    (err: unknown) => log.error({ err }, 'voice activity model failed to load'),
  );
  warmFliteWorker().then(
    (loadMs) => log.info({ loadMs: Math.round(loadMs) }, 'offline voice ready'),
    (err: unknown) => log.error({ err }, 'offline voice failed to load'),
  );
  // Loading it blocks the event loop for about 0.2 s: better now than under a live call.
  loadBucketSdk().catch((err: unknown) => log.error({ err }, 'S3 SDK failed to load'));
  // The answer to a call's webhook is TwiML: its builder loads now rather than on that webhook.
  loadTwimlBuilder();
}
