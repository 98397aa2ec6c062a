import { readMulawFile } from '../src/tools/simulator/clip-file.js';
import { runPhoneCall } from '../src/tools/simulator/phone-call.js';
import type { Scenario } from '../src/tools/simulator/scenario.js';

/**
 * The caller load of `npm run bench:peers`, in its own process (off the server's core): `calls`
 * simultaneous emulated Twilio calls to one media-stream websocket, each saying the same script
 * to whichever server is behind it: wait out the greeting, ask a question, talk over the answer
 * 700 ms into it, wait for that reply to end; `--loop` repeats the question and the barge-in
 * until `durationMs`. Prints one JSON line: how the calls ended, every reply latency (caller's
 * last voiced frame to the first bot audio heard) and every barge-in latency (caller's onset over
 * the bot to the `clear`).
 *
 *   tsx bench/peers-caller.ts <ws-url> <calls> <duration-ms> <once|loop> <fixtures-dir>
 */

export interface PeersCallerSummary {
  calls: number;
  outcomes: Record<string, number>;
  replyLatenciesMs: number[];
  bargeInLatenciesMs: number[];
  /** Barge-ins the server never answered with a `clear` (the bot talked on over the caller). */
  bargeInsUnanswered: number;
  generatorClockMaxLagMs: number;
}

const [wssUrl, callsText, durationText, mode, fixturesDir] = process.argv.slice(2);
if (!wssUrl || !callsText || !durationText || (mode !== 'once' && mode !== 'loop') || !fixturesDir) {
  process.stderr.write('usage: peers-caller <ws-url> <calls> <duration-ms> <once|loop> <fixtures-dir>\n');
  process.exit(2);
}
const calls = Number(callsText);
const durationMs = Number(durationText);

// Clips without a pause inside as long as call-gpt's endpointing (200 ms): it answers each final,
// so a question with a longer pause would get two answers, the first while it is still being asked.
const clips = {
  question: { mulaw: await readMulawFile(`${fixturesDir}/A04_cheetah_platforms.ulaw`) },
  interruption: { mulaw: await readMulawFile(`${fixturesDir}/A07_go_forward.ulaw`) },
};
const steps: Scenario['steps'] = [{ do: 'wait-bot-silence', ms: 600 }];
for (let i = 0; i < (mode === 'loop' ? 40 : 1); i++)
  steps.push(
    { do: 'play', clip: 'question' },
    { do: 'wait-bot-audio', thenMs: 700 },
    { do: 'play', clip: 'interruption' },
    { do: 'wait-bot-silence', ms: 600 },
  );
const scenario: Scenario = { steps, maxDurationMs: durationMs, waitTimeoutMs: 15_000 };

// Starts spread over a second, as calls arrive; all of them are on the line together after it.
const reports = await Promise.all(
  Array.from({ length: calls }, async (_, i) => {
    await new Promise((resolve) => setTimeout(resolve, (i * 1000) / calls));
    return runPhoneCall({ target: { wssUrl }, scenario, clips });
  }),
);

const summary: PeersCallerSummary = {
  calls: reports.length,
  outcomes: {},
  replyLatenciesMs: [],
  bargeInLatenciesMs: [],
  bargeInsUnanswered: 0,
  generatorClockMaxLagMs: Math.max(0, ...reports.map((r) => r.metrics.clockMaxLagMs)),
};
for (const report of reports) {
  summary.outcomes[report.outcome] = (summary.outcomes[report.outcome] ?? 0) + 1;
  for (const utterance of report.metrics.utterances) {
    // A reply to the question; the interruption's reply is the answer to a barge-in, timed apart.
    if (utterance.clip === 'question' && utterance.replyLatencyMs !== null)
      summary.replyLatenciesMs.push(utterance.replyLatencyMs);
    if (utterance.clip === 'interruption' && utterance.bargeIn && utterance.endMs !== null) {
      if (utterance.bargeInLatencyMs !== null) summary.bargeInLatenciesMs.push(utterance.bargeInLatencyMs);
      else summary.bargeInsUnanswered += 1;
    }
  }
}
process.stdout.write(`${JSON.stringify(summary)}\n`);
