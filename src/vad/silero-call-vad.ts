import type { CallVadFactory } from './call-vad.js';
import { workerSileroBatcher } from './silero-worker-runner.js';
import { VadStream } from './vad-stream.js';

/**
 * The call's VAD on Silero: inference runs in the process's Silero worker thread, batched with
 * every other call's windows (silero-batcher.ts); the recurrent state is the call's.
 * If inference fails the call goes on without VAD (STT finals still end turns) rather than dying.
 */
export const createSileroCallVad: CallVadFactory = (params, events, log) => {
  let failed = false;
  const stream = new VadStream(params, events, { batcher: workerSileroBatcher() });
  const onError = (err: unknown) => {
    if (failed) return;
    failed = true;
    stream.dispose();
    log.error({ err }, 'voice activity detection failed; continuing without it');
  };
  return {
    push(pcm) {
      if (!failed) stream.push(pcm).catch(onError);
    },
    dispose() {
      stream.dispose();
    },
  };
};
