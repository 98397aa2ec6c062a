import type { CallVadFactory } from '../pipeline/call-vad.js';
import { VadStream } from './vad-stream.js';

/**
 * The call's VAD on Silero: the ONNX session is shared by the process, the state is the call's.
 * If inference fails the call goes on without VAD (STT finals still end turns) rather than dying.
 */
export const createSileroCallVad: CallVadFactory = (params, events, log) => {
  let failed = false;
  const stream = new VadStream(params, {
    onSpeechStart: () => events.onSpeechStart(),
    onSpeechStop: () => events.onSpeechStop(),
  });
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
