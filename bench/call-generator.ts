import { readMulawFile } from '../src/tools/simulator/clip-file.js';
import { runPhoneCall } from '../src/tools/simulator/phone-call.js';
import type { Scenario } from '../src/tools/simulator/scenario.js';

/**
 * One load-generator process for the capacity sweep: holds `calls` simultaneous calls open for
 * `durationMs`, each talking in a loop (a question, wait for the answer, again), then prints one
 * JSON line with what it saw. Separate processes keep the generator off the server's cores'
 * event loop, and let one slow generator show in its own clock lag rather than in the server's.
 */

const [wssUrl, callsText, durationText, fixturesDir] = process.argv.slice(2);
if (!wssUrl || !callsText || !durationText || !fixturesDir) {
  process.stderr.write('usage: call-generator <wss-url> <calls> <duration-ms> <fixtures-dir>\n');
  process.exit(2);
}
const calls = Number(callsText);
const durationMs = Number(durationText);

const question = { mulaw: await readMulawFile(`${fixturesDir}/A07_go_forward.ulaw`) };
const steps: Scenario['steps'] = [];
for (let i = 0; i < 40; i++)
  steps.push(
    { do: 'play', clip: 'question' },
    { do: 'wait-bot-silence', ms: 400, timeoutMs: 8000 },
    { do: 'wait', ms: 300 },
  );
const scenario: Scenario = { steps, maxDurationMs: durationMs, waitTimeoutMs: 8000 };

// Stagger starts over a second so 100 calls do not all begin on the same tick.
const reports = await Promise.all(
  Array.from({ length: calls }, async (_, i) => {
    await new Promise((resolve) => setTimeout(resolve, (i * 1000) / calls));
    return runPhoneCall({ target: { wssUrl }, scenario, clips: { question } });
  }),
);

const summary = {
  calls: reports.length,
  failed: reports.filter((r) => r.outcome !== 'completed').length,
  outcomes: countBy(reports.map((r) => r.outcome)),
  replyLatenciesMs: reports.flatMap((r) => r.metrics.replyLatenciesMs),
  underruns: reports.reduce((n, r) => n + r.metrics.bot.underruns, 0),
  longestUnderrunMs: Math.max(0, ...reports.map((r) => r.metrics.bot.longestUnderrunMs)),
  violations: reports.reduce((n, r) => n + r.metrics.violations.total, 0),
  generatorClockMaxLagMs: Math.max(0, ...reports.map((r) => r.metrics.clockMaxLagMs)),
};
process.stdout.write(`${JSON.stringify(summary)}\n`);

function countBy(values: string[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const value of values) counts[value] = (counts[value] ?? 0) + 1;
  return counts;
}
