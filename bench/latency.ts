import { readMulawFile } from '../src/tools/simulator/clip-file.js';
import type { CallReport } from '../src/tools/simulator/call-report.js';
import { runPhoneCall } from '../src/tools/simulator/phone-call.js';
import type { Scenario } from '../src/tools/simulator/scenario.js';
import type { CallSummary } from '../src/pipeline/call-metrics.js';
import type { EmulatorLatencies } from '../src/tools/emulators/types.js';

/**
 * The latency phase: a few calls at a time through the server, each with a greeting, a question,
 * and a barge-in during the answer. Caller-side figures come from the simulator, server-side ones
 * from the server's `call ended` lines (per turn, ms from the end of the caller's turn).
 */

/** The emulated vendors' pace for every benchmark, so figures from different scripts compare. */
export const BENCH_LATENCIES = {
  sttFinalDelayMs: 150,
  llmFirstTokenMs: 200,
  llmTokensPerSec: 50,
  ttsFirstByteMs: 100,
  ttsRealTimeFactor: 2,
} as const;

/** `switchboard emulate` arguments for that pace, the caller's transcript and the bot's reply. */
export function benchEmulatorArgs(): string[] {
  const l = BENCH_LATENCIES;
  return [
    ...['--stt-final-delay-ms', String(l.sttFinalDelayMs), '--llm-first-token-ms', String(l.llmFirstTokenMs)],
    ...['--llm-tokens-per-sec', String(l.llmTokensPerSec), '--tts-first-byte-ms', String(l.ttsFirstByteMs)],
    ...['--tts-real-time-factor', String(l.ttsRealTimeFactor)],
    ...['--transcript', 'do you have a table', '--reply', BENCH_REPLY],
  ];
}

/** Every reply opens with a one-token sentence, so the LLM's share of the wait is its first-token time. */
export const BENCH_REPLY =
  'Sure. We have a table for two at eight, and another one at nine if you would like a later dinner by the window, with a view of the harbour lights.';

export const LATENCY_SCENARIO: Scenario = {
  steps: [
    { do: 'wait-bot-silence', ms: 600 },
    { do: 'play', clip: 'question' },
    // Interrupt 700 ms into the answer.
    { do: 'wait-bot-audio', thenMs: 700 },
    { do: 'play', clip: 'interruption' },
    { do: 'wait-bot-silence', ms: 600 },
  ],
  waitTimeoutMs: 15_000,
};

export interface LatencySamples {
  /** Caller's last voiced frame to the first bot audio received (simulator). */
  replyLatencyMs: number[];
  /** Caller's voice over the bot to `clear` received (simulator). */
  bargeInLatencyMs: number[];
  /** Bot audio received after a clear, per clear (simulator). */
  lateAudioMs: number[];
  /** Server: first media frame sent minus the emulated providers' latency, per answer turn. */
  bridgeOverheadMs: number[];
  /** Server: first TTS audio in to first media frame out, per turn. */
  ttsToFrameMs: number[];
  /** Server: end of the caller's turn to the first frame sent, per answer turn. */
  firstFrameMs: number[];
  failedCalls: number;
  violations: number;
}

export async function runLatencyPhase(options: {
  wssUrl: string;
  calls: number;
  concurrency: number;
  latencies: EmulatorLatencies;
  serverCalls: CallSummary[];
  fixturesDir: string;
}): Promise<LatencySamples> {
  const clips = {
    question: { mulaw: await readMulawFile(`${options.fixturesDir}/A06_birch_canoe.ulaw`) },
    interruption: { mulaw: await readMulawFile(`${options.fixturesDir}/A07_go_forward.ulaw`) },
  };
  const reports: CallReport[] = [];
  const firstServerCall = options.serverCalls.length;
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < options.calls) {
      next += 1;
      reports.push(await runPhoneCall({ target: { wssUrl: options.wssUrl }, scenario: LATENCY_SCENARIO, clips }));
    }
  };
  await Promise.all(Array.from({ length: options.concurrency }, worker));
  // The server logs each call's end a moment after the caller hangs up.
  const deadline = Date.now() + 5000;
  while (options.serverCalls.length - firstServerCall < options.calls && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 50));
  }

  const samples: LatencySamples = {
    replyLatencyMs: [],
    bargeInLatencyMs: [],
    lateAudioMs: [],
    bridgeOverheadMs: [],
    ttsToFrameMs: [],
    firstFrameMs: [],
    failedCalls: 0,
    violations: 0,
  };
  for (const report of reports) {
    if (report.outcome !== 'completed') samples.failedCalls += 1;
    samples.violations += report.metrics.violations.total;
    const [question, interruption] = report.metrics.utterances;
    if (question?.replyLatencyMs != null) samples.replyLatencyMs.push(question.replyLatencyMs);
    if (interruption?.bargeInLatencyMs != null) samples.bargeInLatencyMs.push(interruption.bargeInLatencyMs);
    for (const clear of report.metrics.clears) samples.lateAudioMs.push(clear.lateAudioMs);
  }
  const providerMs = options.latencies.llmFirstTokenMs + options.latencies.ttsFirstByteMs;
  for (const call of options.serverCalls.slice(firstServerCall)) {
    for (const turn of call.perTurn) {
      if (turn.ttsFirstAudioMs !== undefined && turn.firstFrameSentMs !== undefined) {
        samples.ttsToFrameMs.push(turn.firstFrameSentMs - turn.ttsFirstAudioMs);
      }
      if (turn.kind === 'answer' && turn.firstFrameSentMs !== undefined) {
        samples.firstFrameMs.push(turn.firstFrameSentMs);
        samples.bridgeOverheadMs.push(turn.firstFrameSentMs - providerMs);
      }
    }
  }
  return samples;
}
