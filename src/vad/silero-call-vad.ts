import type { CallVadFactory } from './call-vad.js';
import { SETTLED } from './silero.js';
import { networkSileroBatcher } from './silero-network.js';
import { VadStream, type VadStreamEvents } from './vad-stream.js';

/**
 * The call's VAD on Silero: the network runs in the event loop (silero-network.ts), shared by
 * every call, on each window as the frame that completes it is pushed; the recurrent state is the call's.
 * If inference fails the call goes on without VAD (STT finals still end turns) rather than dying.
 */
export const createSileroCallVad: CallVadFactory = (params, events, log) => {
  let failed = false;
  // Every suspicion decision, at debug: which condition kept a suspicion from starting.
  const debug = log.isLevelEnabled('debug');
  const onSuspicionDecision: VadStreamEvents['onSuspicionDecision'] = (decision) => {
    if (debug) log.debug(decision, 'vad suspicion decision');
    events.onSuspicionDecision?.(decision);
  };
  const stream = new VadStream(params, { ...events, onSuspicionDecision }, { batcher: networkSileroBatcher() });
  const onError = (err: unknown) => {
    if (failed) return;
    failed = true;
    stream.dispose();
    log.error({ err }, 'voice activity detection failed; continuing without it');
  };
  return {
    push(pcm) {
      if (failed) return;
      const run = stream.push(pcm);
      // Most pushes are handled before they return (silero.ts): nothing to catch, no promise made.
      if (run !== SETTLED) run.catch(onError);
    },
    dispose() {
      stream.dispose();
    },
  };
};
