import { fileURLToPath } from 'node:url';
import { type Clock, scaledClock } from '../../src/shared/clock.js';
import { readMulawFile } from '../../src/tools/simulator/clip-file.js';

/** The speech-to-speech call tests' shared parts (s2s-call.test.ts, s2s-function-calls.test.ts). */

const fixture = (name: string) => fileURLToPath(new URL(`../../fixtures/audio/${name}`, import.meta.url));

/** The emulated vendors' latencies: quick to answer, audio generated at four times real time. */
export const S2S_LATENCIES = { llmFirstTokenMs: 80, ttsFirstByteMs: 40, ttsRealTimeFactor: 4 };

/**
 * The calls' clock (shared/clock.ts), shared by the server, the simulator, the webhooks and the
 * Gemini emulator's playback wait: S2S_SPEED times faster than wall time where a test is about
 * what the call says and does, real time where it is about barge-in (the clear, the heard point,
 * the truncation). The emulators generate on wall time, as a vendor does: their 4x is then
 * 4/S2S_SPEED x.
 */
export const S2S_SPEED = 3;
export const S2S_CALL_CLOCK: Clock = scaledClock(S2S_SPEED);

/** The caller's question ("the birch canoe…") and interruption ("go forward…"), 8 kHz mu-law. */
export async function s2sClips() {
  return {
    question: { mulaw: await readMulawFile(fixture('A06_birch_canoe.ulaw')) },
    interruption: { mulaw: await readMulawFile(fixture('A07_go_forward.ulaw')) },
  };
}
