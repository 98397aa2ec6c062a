import type { CallStart, CallTransport, CallTransportHandler } from '../pipeline/call-transport.js';
import type { CallRecorder } from './call-tracks-recorder.js';

/**
 * The bot's side of a call, seen by the recorder: wraps the transport the session sends through,
 * recording each media frame and each clear before passing it on. Nothing else changes.
 */
export function tapTransport(inner: CallTransport, recorder: CallRecorder): CallTransport {
  return {
    get callSid() {
      return inner.callSid;
    },
    get stats() {
      return inner.stats;
    },
    sendMedia(frame) {
      recorder.botFrame(frame);
      inner.sendMedia(frame);
    },
    sendMark(name) {
      inner.sendMark(name);
    },
    sendClear() {
      recorder.botClear();
      inner.sendClear();
    },
    close(code, reason) {
      inner.close(code, reason);
    },
  };
}

/**
 * The caller's side: wraps the session's handler, recording each inbound frame, naming the
 * recording after the carrier's call sid, and finishing it when the call ends.
 */
export function tapHandler(inner: CallTransportHandler, recorder: CallRecorder): CallTransportHandler {
  return {
    onStart(start: CallStart) {
      recorder.setRoomName(start.callSid);
      inner.onStart(start);
    },
    onAudio(mulaw, streamTimestampMs) {
      recorder.callerFrame(mulaw, recorder.callerFrameTimeMs(streamTimestampMs));
      inner.onAudio(mulaw, streamTimestampMs);
    },
    onDtmf(digit) {
      inner.onDtmf(digit);
    },
    onMark(name) {
      inner.onMark(name);
    },
    onEnd(reason) {
      try {
        inner.onEnd(reason);
      } finally {
        void recorder.finish();
      }
    },
  };
}
