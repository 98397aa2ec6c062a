import { readFile, writeFile } from 'node:fs/promises';
import { basename, dirname, extname } from 'node:path';
import type { CallReport } from '../tools/simulator/call-report.js';
import { loadScenarioClips } from '../tools/simulator/clip-file.js';
import { PhoneCall, type PhoneCallTarget } from '../tools/simulator/phone-call.js';
import { formatSummary, formatTimelineEvent, isMarkEvent } from '../tools/simulator/report-text.js';
import {
  type CallerStep,
  type ClipSource,
  DEFAULT_MAX_DURATION_MS,
  type Scenario,
  parseScenario,
} from '../tools/simulator/scenario.js';
import { USAGE_EXIT, UsageError, parseCommandLine, usageLine } from './usage.js';
import { CLOSE } from '../shared/close-codes.js';

const HELP = `usage: switchboard call (--url <webhook-url> | --wss <stream-url>) [options]

Places one simulated phone call the way Twilio does: POSTs the voice webhook (or dials the media
stream directly), streams caller audio every 20 ms, plays the bot's audio back in real time
(echoing marks, honouring clear), then prints a timeline and a latency summary.

target (one of):
  --url <url>             TwiML voice webhook; its <Connect><Stream url> and <Parameter>s are used
  --wss <url>             media stream URL (a configuration's wssUrl), dialled directly

what the caller does (in this order):
  --wait-greeting         before speaking, wait until the bot has spoken and gone quiet
  --play <file>           say this clip; repeatable, clips are played in turn, each after the bot's
                          reply to the previous one has ended. .wav (any rate; resampled to 8 kHz
                          mono) or .ulaw/.raw (headerless 8 kHz mu-law)
  --barge-in-ms <n>       play the last --play clip <n> ms after the bot's audio starts (interrupting
                          it) instead of after it has finished
  --dtmf <digits>         key presses (0-9 * # A-D) sent after the clips
  --scenario <file.json>  a scenario file (steps and clips) instead of the options above
then the caller hangs up once the bot's last reply has ended, unless:
  --hangup-after-ms <n>   hang up <n> ms after the stream started (and stay on the line until then)
each wait for the bot gives up after 15 s (shown as wait-timeout) and the call carries on.

call details:
  --from <number>         caller number (default +15555550100)
  --to <number>           called number (default +15555550199); with --url <server>/twilio/voice,
                          the bought number (or SIP address) whose pinless dial-in to exercise
  --param <name=value>    extra stream parameter (start.customParameters); repeatable
  --auth-token <token>    sign the webhook and upgrade (X-Twilio-Signature); default $TWILIO_AUTH_TOKEN
  --reply-silence-ms <n>  bot silence that counts as the end of its turn (default 1000)

output:
  --out <file.wav>        the bot's audio as heard, 8 kHz mono 16-bit, silence where it was quiet
  --stereo-out <file.wav> caller (left) and bot (right) on one timeline
  --json <file.json>      the full report (timeline and metrics)
  --verbose               also print mark traffic in the timeline
  --quiet                 print only the summary
  -h, --help              show this text

exit status: 0 for a normal call; 1 when the call could not connect, failed, was closed by the
server with an error code, or the server broke the protocol; 2 for bad options.
`;

/** Close codes that end a call normally (1005: closed without a code). */
const NORMAL_CLOSE_CODES = new Set<number>([CLOSE.normal, CLOSE.goingAway, CLOSE.noStatus]);
const DEFAULT_REPLY_SILENCE_MS = 1000;
/** At a terminal, a bot silent for 15 s has failed; no need to sit out the engine's 30 s. */
const CLI_WAIT_TIMEOUT_MS = 15_000;

export interface CallCliIo {
  stdout: { write(text: string): unknown };
  stderr: { write(text: string): unknown };
}

function nonNegativeInt(name: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0) throw new UsageError(`--${name} must be a whole number of ms, got "${value}"`);
  return n;
}

/** Clip names shown in the timeline: the file's base name, made unique. */
function clipName(file: string, taken: Set<string>): string {
  const base = basename(file, extname(file)) || 'clip';
  let name = base;
  for (let i = 2; taken.has(name); i++) name = `${base}#${i}`;
  taken.add(name);
  return name;
}

interface FlagScript {
  plays: string[];
  bargeInMs: number | undefined;
  dtmf: string | undefined;
  waitGreeting: boolean;
  replySilenceMs: number;
  hangupAfterMs: number | undefined;
}

/** The flags' caller behaviour as a scenario (the same format as --scenario files). */
export function scenarioFromFlags(flags: FlagScript): Scenario {
  const steps: CallerStep[] = [];
  const clips: Record<string, ClipSource> = {};
  const taken = new Set<string>();
  const silence: CallerStep = { do: 'wait-bot-silence', ms: flags.replySilenceMs };
  if (flags.waitGreeting) steps.push(silence);
  flags.plays.forEach((file, i) => {
    const name = clipName(file, taken);
    clips[name] = { file };
    const last = i === flags.plays.length - 1;
    if (last && flags.bargeInMs !== undefined) steps.push({ do: 'wait-bot-audio', thenMs: flags.bargeInMs });
    else if (i > 0) steps.push(silence);
    steps.push({ do: 'play', clip: name });
  });
  if (flags.dtmf) steps.push({ do: 'dtmf', digits: flags.dtmf });
  if (flags.hangupAfterMs !== undefined) {
    return {
      steps,
      clips,
      endOfScript: 'stay',
      maxDurationMs: flags.hangupAfterMs,
      waitTimeoutMs: CLI_WAIT_TIMEOUT_MS,
    };
  }
  steps.push(silence);
  return {
    steps,
    clips,
    endOfScript: 'hangup',
    maxDurationMs: DEFAULT_MAX_DURATION_MS,
    waitTimeoutMs: CLI_WAIT_TIMEOUT_MS,
  };
}

function parseParams(pairs: string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const pair of pairs) {
    const eq = pair.indexOf('=');
    if (eq <= 0) throw new UsageError(`--param takes name=value, got "${pair}"`);
    out[pair.slice(0, eq)] = pair.slice(eq + 1);
  }
  return out;
}

/** A normal call: it connected, ended without an error close, and the server kept to the protocol. */
export function callSucceeded(report: CallReport): boolean {
  if (report.outcome === 'connect-failed' || report.outcome === 'error') return false;
  if (report.metrics.violations.total > 0) return false;
  if (report.close && report.close.by === 'server' && !NORMAL_CLOSE_CODES.has(report.close.code)) return false;
  return true;
}

/** `switchboard call ...`: one simulated call; returns the exit status. */
export async function runCall(argv: string[], io: CallCliIo = process): Promise<number> {
  let values;
  try {
    ({ values } = parseCommandLine({
      args: argv,
      strict: true,
      allowPositionals: false,
      options: {
        url: { type: 'string' },
        wss: { type: 'string' },
        play: { type: 'string', multiple: true },
        'barge-in-ms': { type: 'string' },
        dtmf: { type: 'string' },
        'hangup-after-ms': { type: 'string' },
        'wait-greeting': { type: 'boolean' },
        'reply-silence-ms': { type: 'string' },
        scenario: { type: 'string' },
        from: { type: 'string' },
        to: { type: 'string' },
        param: { type: 'string', multiple: true },
        'auth-token': { type: 'string' },
        out: { type: 'string' },
        'stereo-out': { type: 'string' },
        json: { type: 'string' },
        verbose: { type: 'boolean' },
        quiet: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
    }));
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    io.stderr.write(usageLine('call', err.message));
    return USAGE_EXIT;
  }
  if (values.help) {
    io.stdout.write(HELP);
    return 0;
  }

  let target: PhoneCallTarget;
  let scenario: Scenario;
  let scenarioDir = process.cwd();
  let customParameters: Record<string, string>;
  try {
    if (Boolean(values.url) === Boolean(values.wss)) throw new UsageError('give exactly one of --url and --wss');
    target = values.url ? { webhookUrl: values.url } : { wssUrl: values.wss! };
    customParameters = parseParams(values.param ?? []);
    if (values.dtmf !== undefined && !/^[0-9*#A-D]{1,32}$/.test(values.dtmf))
      throw new UsageError('--dtmf takes digits 0-9, *, #, A-D');
    const flags: FlagScript = {
      plays: values.play ?? [],
      bargeInMs: nonNegativeInt('barge-in-ms', values['barge-in-ms']),
      dtmf: values.dtmf,
      waitGreeting: values['wait-greeting'] ?? false,
      replySilenceMs: nonNegativeInt('reply-silence-ms', values['reply-silence-ms']) ?? DEFAULT_REPLY_SILENCE_MS,
      hangupAfterMs: nonNegativeInt('hangup-after-ms', values['hangup-after-ms']),
    };
    if (flags.bargeInMs !== undefined && flags.plays.length === 0)
      throw new UsageError('--barge-in-ms needs a --play clip to barge in with');
    if (values.scenario) {
      if (flags.plays.length || flags.bargeInMs !== undefined || flags.dtmf || flags.waitGreeting) {
        throw new UsageError('--scenario replaces --play, --barge-in-ms, --dtmf and --wait-greeting');
      }
      scenario = parseScenario(JSON.parse(await readFile(values.scenario, 'utf8')));
      scenarioDir = dirname(values.scenario);
      if (flags.hangupAfterMs !== undefined) scenario = { ...scenario, maxDurationMs: flags.hangupAfterMs };
    } else {
      scenario = scenarioFromFlags(flags);
    }
  } catch (err) {
    io.stderr.write(`switchboard call: ${err instanceof Error ? err.message : String(err)}\n`);
    return 2;
  }

  let clips;
  try {
    clips = await loadScenarioClips(scenario, scenarioDir);
  } catch (err) {
    io.stderr.write(`switchboard call: cannot load audio: ${err instanceof Error ? err.message : String(err)}\n`);
    return 2;
  }

  const abort = new AbortController();
  const onSigint = () => abort.abort();
  process.once('SIGINT', onSigint);
  const call = new PhoneCall({
    target,
    scenario,
    clips,
    from: values.from,
    to: values.to,
    customParameters,
    authToken: values['auth-token'] ?? (process.env.TWILIO_AUTH_TOKEN || undefined),
    record: Boolean(values.out || values['stereo-out']),
    signal: abort.signal,
    onEvent: values.quiet
      ? undefined
      : (event) => {
          if (values.verbose || !isMarkEvent(event)) io.stdout.write(`${formatTimelineEvent(event)}\n`);
        },
  });
  let report: CallReport;
  try {
    report = await call.run();
  } finally {
    process.removeListener('SIGINT', onSigint);
  }
  if (report.outcome === 'connect-failed' && !values.quiet) {
    // Set-up events are only streamed once the stream starts; show why dialling failed.
    for (const event of report.timeline) io.stdout.write(`${formatTimelineEvent(event)}\n`);
  }

  io.stdout.write(`\n${formatSummary(report)}`);
  const written: string[] = [];
  if (values.out && call.recording) {
    await writeFile(values.out, call.recording.botWav());
    written.push(values.out);
  }
  if (values['stereo-out'] && call.recording) {
    await writeFile(values['stereo-out'], call.recording.stereoWav());
    written.push(values['stereo-out']);
  }
  if (values.json) {
    await writeFile(values.json, `${JSON.stringify(report, null, 2)}\n`);
    written.push(values.json);
  }
  if (written.length) io.stdout.write(`  wrote ${written.join(', ')}\n`);
  return callSucceeded(report) ? 0 : 1;
}
