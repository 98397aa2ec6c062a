import type { Logger } from 'pino';
import { packagePath } from '../../shared/package-files.js';
import type { AnsweredSandboxCall, SandboxCallee } from '../../telephony/carrier/sandbox-call.js';
import type { CallerClip } from './caller-clip.js';
import { readMulawFile } from './clip-file.js';
import { PhoneCall } from './phone-call.js';
import type { CallerStep, Scenario } from './scenario.js';

/** A simulated callee never stays on the line longer than this. */
const MAX_CALLEE_MS = 120_000;
/** How long the callee of a transfer talks with the caller put through before hanging up. */
export const TRANSFERRED_TALK_MS = 3000;
/** Two things the callee says, from the project's recorded speech, each after the bot has spoken. */
const CALLEE_CLIPS = ['A04_cheetah_platforms.ulaw', 'A06_birch_canoe.ulaw'];
const FIXTURES_DIR = `${packagePath('fixtures', 'audio')}/`;

let clipsLoaded: Promise<Record<string, CallerClip>> | undefined;

/** The callee's lines; missing fixture files (a trimmed install) leave a callee who only listens. */
function calleeClips(log: Logger): Promise<Record<string, CallerClip>> {
  clipsLoaded ??= Promise.all(CALLEE_CLIPS.map((file) => readMulawFile(FIXTURES_DIR + file))).then(
    (audio) => Object.fromEntries(audio.map((mulaw, i) => [`line-${i + 1}`, { mulaw }])),
    (err: unknown) => {
      log.warn({ err }, 'sandbox callee has no recorded speech; it will listen and hang up');
      return {};
    },
  );
  return clipsLoaded;
}

/** Listen to the bot, answer after it finishes, twice, then say goodbye by hanging up. */
function calleeScenario(clips: Record<string, CallerClip>): Scenario {
  const steps: CallerStep[] = [
    { do: 'wait-bot-audio', timeoutMs: 8000 },
    { do: 'wait-bot-silence', ms: 700, timeoutMs: 20_000 },
  ];
  for (const clip of Object.keys(clips)) {
    steps.push(
      { do: 'play', clip },
      // The bot may answer in the clip's trailing silence, and even finish before its last frame.
      { do: 'wait-bot-audio', timeoutMs: 10_000, sinceLastClip: true },
      { do: 'wait-bot-silence', ms: 700, timeoutMs: 20_000, sinceLastClip: true },
    );
  }
  return { steps, endOfScript: 'hangup', maxDurationMs: MAX_CALLEE_MS };
}

/**
 * The sandbox carrier's callee: a simulated phone that answers, listens to the bot and answers
 * it with recorded speech, twice, then hangs up. Plugged into the sandbox carrier by the CLI.
 */
export const simulatedCallee: SandboxCallee = async (answered: AnsweredSandboxCall) => {
  if (answered.answerUrl === undefined) return takeTransferredCall(answered);
  const clips = await calleeClips(answered.log);
  const call = new PhoneCall({
    target: { webhookUrl: answered.answerUrl },
    scenario: calleeScenario(clips),
    clips,
    callSid: answered.callSid,
    from: answered.from,
    to: answered.to,
    direction: 'outbound-api',
    authToken: answered.authToken,
    signal: answered.signal,
    clock: answered.clock,
  });
  const report = await call.run();
  answered.log.info(
    {
      outcome: report.outcome,
      endReason: report.endReason,
      durationMs: Math.round(report.durationMs),
      botAudioMs: report.metrics.bot.receivedAudioMs,
      calleeTurns: report.metrics.utterances.length,
      replyLatenciesMs: report.metrics.utterances.map((u) => u.replyLatencyMs),
      ...(report.metrics.bot.keysHeard ? { keysHeard: report.metrics.bot.keysHeard } : {}),
    },
    'sandbox callee hung up',
  );
};

/**
 * The callee of a transfer: the person at the target picks up a caller the bot put through. No
 * bot is on this leg and the caller's audio does not pass through the sandbox, so the callee
 * stays on the line for a short conversation's time (or until the carrier ends the leg) and hangs up.
 */
async function takeTransferredCall(answered: AnsweredSandboxCall): Promise<void> {
  answered.log.info({ transferredCallSid: answered.transferredCallSid }, 'sandbox callee answered a transferred call');
  await answered.clock.sleep(TRANSFERRED_TALK_MS, answered.signal).catch(() => undefined);
  answered.log.info({ transferredCallSid: answered.transferredCallSid }, 'sandbox callee hung up the transferred call');
}
