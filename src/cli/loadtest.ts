import { readFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { packagePath } from '../shared/package-files.js';
import type { Distribution } from '../tools/loadtest/aggregate.js';
import { type LoadProgress, type LoadTestOptions, runLoadTest } from '../tools/loadtest/run-loadtest.js';
import type { LoadTestReport } from '../tools/loadtest/load-test-report.js';
import { writeReports } from '../tools/loadtest/report-file.js';
import { loadScenarioClips } from '../tools/simulator/clip-file.js';
import type { PhoneCallTarget } from '../tools/simulator/phone-call.js';
import { clipsPlayedBy, parseScenario } from '../tools/simulator/scenario.js';
import { type FunctionReceiver, startFunctionReceiver } from '../tools/loadtest/function-receiver.js';
import { USAGE_EXIT, UsageError, listenFailure, parseCommandLine, portOption, usageLine } from './usage.js';

const DEFAULT_SCENARIO = packagePath('scenarios', 'default.json');

const HELP = `usage: switchboard loadtest (--server URL --config ID | --wss URL | --url WEBHOOK) [options]

Places many simulated phone calls at once against a running Switchboard, each playing a scenario
of recorded speech the way Twilio streams it, and reports what callers experienced: time to the
first bot audio, reply latency, barge-in latency, audio heard after a clear, gaps in the bot's
audio, protocol violations and failed calls. The calls run in worker threads.

target (one of):
  --server <url> --config <id>  a telephony configuration on that server: dials its media
                                stream, ws(s)://<host>/ws/twilio/<id>
  --wss <url>                   a media stream URL (a configuration's wssUrl)
  --url <url>                   a TwiML voice webhook (e.g. https://host/twilio/voice/<id>),
                                POSTed as Twilio does; the stream is the one its TwiML names

load:
  --concurrency <n>      simultaneous calls (default 10)
  --calls <n>            calls in all, at most --concurrency at a time (default: --concurrency)
  --duration-s <s>       instead of --calls: keep --concurrency calls up for this long, starting
                         a new call as each ends, then hang up the ones still running
  --ramp-up-s <s>        start the first --concurrency calls evenly over this long (default 5)
  --scenario <file>      a scenario JSON file (default scenarios/default.json: greeting, a
                         question, a barge-in during the answer, DTMF, hang-up); clip paths are
                         relative to the file
  --workers <n>          generator threads (default one per 100 simultaneous calls)
  --auth-token <token>   sign webhooks and upgrades (X-Twilio-Signature); default $TWILIO_AUTH_TOKEN
  --function-receiver-port <n>
                         answer the bot's function webhooks on http://localhost:<n>/<function>
                         (each after 200 ms, {"ok": true, ...}) for a configuration whose
                         webhook_tools point there; the summary counts its requests

output:
  --out <dir>            where report.json and report.html go (default ./loadtest-report-<time>)
  --quiet                no live progress
  -h, --help             show this text

Progress is one updating line on a terminal, a line a second otherwise. Ctrl-C stops early:
the calls hang up and the reports are still written (Ctrl-C twice quits at once).

exit status: 0 when the run completed (failed calls are results), 1 when no call connected,
2 for bad options.
`;

export interface LoadtestIo {
  stdout: { write(text: string): unknown; isTTY?: boolean };
  stderr: { write(text: string): unknown };
}

function positive(name: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isFinite(n) || n <= 0) throw new UsageError(`--${name} must be a positive number, got "${value}"`);
  return n;
}

function positiveInteger(name: string, value: string | undefined): number | undefined {
  const n = positive(name, value);
  if (n !== undefined && !Number.isInteger(n)) throw new UsageError(`--${name} must be a whole number, got "${value}"`);
  return n;
}

/** Parses a URL and checks its scheme, so a typo fails here rather than as N failed calls. */
function urlOption(name: string, value: string, schemes: readonly string[]): URL {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new UsageError(`--${name} is not a URL: "${value}"`);
  }
  if (!schemes.includes(url.protocol))
    throw new UsageError(`--${name} must be a ${schemes.map((s) => s.slice(0, -1)).join('/')} URL, got "${value}"`);
  return url;
}

function targetOf(values: Record<string, string | boolean | undefined>): { target: PhoneCallTarget; label: string } {
  const server = values.server as string | undefined;
  const config = values.config as string | undefined;
  const wss = values.wss as string | undefined;
  const url = values.url as string | undefined;
  const given = [server || config ? 'server' : undefined, wss, url].filter(Boolean).length;
  if (given !== 1) throw new UsageError('give exactly one target: --server with --config, --wss, or --url');
  if (wss) return { target: { wssUrl: urlOption('wss', wss, ['ws:', 'wss:']).href }, label: wss };
  if (url) return { target: { webhookUrl: urlOption('url', url, ['http:', 'https:']).href }, label: url };
  if (!server || !config) throw new UsageError('--server and --config go together');
  const base = urlOption('server', server, ['http:', 'https:', 'ws:', 'wss:']);
  // The media stream of a configuration, as its wssUrl names it; a path prefix (a proxy) is kept.
  const scheme = base.protocol === 'https:' || base.protocol === 'wss:' ? 'wss:' : 'ws:';
  const prefix = base.pathname.replace(/\/+$/, '');
  return {
    target: { wssUrl: `${scheme}//${base.host}${prefix}/ws/twilio/${encodeURIComponent(config)}` },
    label: `${server} configuration ${config}`,
  };
}

function ms(d: Distribution): string {
  return d.count === 0 ? '—' : `p50 ${d.p50} / p95 ${d.p95} / p99 ${d.p99} / max ${d.max} ms (n=${d.count})`;
}

function pair(p50: number | null, p95: number | null): string {
  return p50 === null ? '—' : `${p50}/${p95} ms`;
}

function progressLine(p: LoadProgress): string {
  return [
    `${(p.elapsedMs / 1000).toFixed(0).padStart(4)} s`,
    `active ${String(p.active).padStart(4)}`,
    `done ${String(p.done).padStart(5)}`,
    `failed ${String(p.failed).padStart(4)}`,
    `reply p50/p95 ${pair(p.replyLatencyP50Ms, p.replyLatencyP95Ms)}`,
    `barge-in p50/p95 ${pair(p.bargeInLatencyP50Ms, p.bargeInLatencyP95Ms)}`,
  ].join('  ');
}

interface Plan {
  options: LoadTestOptions;
  label: string;
  scenarioFile: string;
  out: string | undefined;
  quiet: boolean;
  /** Start the function receiver on this port (0: any free one). */
  functionReceiverPort?: number;
}

async function planOf(argv: string[]): Promise<Plan | 'help'> {
  const values: Record<string, string | boolean | undefined> = parseCommandLine({
    args: argv,
    strict: true,
    options: {
      server: { type: 'string' },
      config: { type: 'string' },
      wss: { type: 'string' },
      url: { type: 'string' },
      concurrency: { type: 'string' },
      calls: { type: 'string' },
      'duration-s': { type: 'string' },
      'ramp-up-s': { type: 'string' },
      scenario: { type: 'string' },
      workers: { type: 'string' },
      'auth-token': { type: 'string' },
      'function-receiver-port': { type: 'string' },
      out: { type: 'string' },
      quiet: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  }).values;
  if (values.help) return 'help';

  const target = targetOf(values);
  const concurrency = positiveInteger('concurrency', values.concurrency as string | undefined) ?? 10;
  const calls = positiveInteger('calls', values.calls as string | undefined);
  const durationS = positive('duration-s', values['duration-s'] as string | undefined);
  if (durationS !== undefined && calls !== undefined) throw new UsageError('give --calls or --duration-s, not both');
  const rampUpS = values['ramp-up-s'] === undefined ? 5 : Number(values['ramp-up-s']);
  if (!Number.isFinite(rampUpS) || rampUpS < 0)
    throw new UsageError(`--ramp-up-s must be zero or more, got "${values['ramp-up-s']}"`);
  const workers = positiveInteger('workers', values.workers as string | undefined);

  const scenarioFile = resolve((values.scenario as string | undefined) ?? DEFAULT_SCENARIO);
  let text: string;
  try {
    text = await readFile(scenarioFile, 'utf8');
  } catch (err) {
    throw new UsageError(
      `cannot read the scenario ${scenarioFile}: ${err instanceof Error ? err.message : String(err)}`,
    );
  }
  let scenario;
  try {
    scenario = parseScenario(JSON.parse(text));
  } catch (err) {
    throw new UsageError(`${scenarioFile}: ${err instanceof Error ? err.message : String(err)}`);
  }
  const missing = [...clipsPlayedBy(scenario)].filter((name) => scenario.clips?.[name] === undefined);
  if (missing.length > 0)
    throw new UsageError(
      `${scenarioFile}: steps play ${missing.map((n) => `"${n}"`).join(', ')} but "clips" does not define ${missing.length === 1 ? 'it' : 'them'}`,
    );
  let clips;
  try {
    clips = await loadScenarioClips(scenario, dirname(scenarioFile));
  } catch (err) {
    throw new UsageError(
      `${scenarioFile}: a clip could not be loaded: ${err instanceof Error ? err.message : String(err)}`,
    );
  }

  return {
    options: {
      target: target.target,
      scenario,
      clips,
      concurrency,
      calls,
      durationMs: durationS === undefined ? undefined : durationS * 1000,
      rampUpMs: rampUpS * 1000,
      workers,
      authToken: (values['auth-token'] as string | undefined) ?? process.env.TWILIO_AUTH_TOKEN,
    },
    label: target.label,
    scenarioFile,
    out: values.out as string | undefined,
    quiet: values.quiet === true,
    functionReceiverPort:
      values['function-receiver-port'] === undefined
        ? undefined
        : portOption(values['function-receiver-port'] as string),
  };
}

/** `switchboard loadtest`. */
export async function runLoadtestCli(argv: string[], io: LoadtestIo = process): Promise<number> {
  let plan: Plan | 'help';
  try {
    plan = await planOf(argv);
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    io.stderr.write(usageLine('loadtest', err.message));
    return USAGE_EXIT;
  }
  if (plan === 'help') {
    io.stdout.write(HELP);
    return 0;
  }
  const { options, label, quiet } = plan;

  const tty = io.stdout.isTTY === true;
  options.onProgress = (p) => {
    if (quiet) return;
    if (tty) io.stdout.write(`\r${progressLine(p)}\u001b[K`);
    else io.stdout.write(`${progressLine(p)}\n`);
  };
  // Ctrl-C: hang up and still report; a second one quits without waiting.
  const interrupt = new AbortController();
  const onSigint = (): void => {
    if (interrupt.signal.aborted) process.exit(130);
    io.stderr.write('\nstopping: hanging up the calls in progress (Ctrl-C again to quit now)\n');
    interrupt.abort();
  };
  options.signal = interrupt.signal;
  process.on('SIGINT', onSigint);

  io.stdout.write(
    `load test: ${label}, ${options.concurrency} simultaneous, ${options.durationMs === undefined ? `${options.calls ?? options.concurrency} calls` : `${options.durationMs / 1000} s`}, ramp-up ${options.rampUpMs / 1000} s, scenario ${plan.scenarioFile}\n`,
  );
  let receiver: FunctionReceiver | undefined;
  if (plan.functionReceiverPort !== undefined) {
    try {
      receiver = await startFunctionReceiver(plan.functionReceiverPort);
    } catch (err) {
      process.off('SIGINT', onSigint);
      const why =
        listenFailure(err, 'localhost', plan.functionReceiverPort) ??
        (err instanceof Error ? err.message : String(err));
      io.stderr.write(`switchboard loadtest: the function receiver cannot listen: ${why}\n`);
      return 1;
    }
    io.stdout.write(`function receiver: ${receiver.url}/<function>\n`);
  }
  let result;
  try {
    result = await runLoadTest(options);
  } catch (err) {
    io.stderr.write(`switchboard loadtest: ${err instanceof Error ? err.message : String(err)}\n`);
    return 1;
  } finally {
    process.off('SIGINT', onSigint);
    await receiver?.close();
  }
  if (tty && !quiet) io.stdout.write('\n');

  const report: LoadTestReport = {
    startedAt: result.startedAt,
    elapsedMs: result.elapsedMs,
    config: {
      target: label,
      scenarioFile: plan.scenarioFile,
      scenario: options.scenario,
      concurrency: options.concurrency,
      calls: options.durationMs === undefined ? (options.calls ?? options.concurrency) : undefined,
      durationMs: options.durationMs,
      rampUpMs: options.rampUpMs,
      workers: result.workers,
    },
    stoppedEarly: result.stoppedEarly,
    generatorErrors: result.generatorErrors,
    aggregate: result.aggregate,
    calls: result.calls,
  };
  const dir = plan.out ?? `loadtest-report-${result.startedAt.replace(/[:.]/g, '-')}`;
  const files = await writeReports(report, dir);
  const a = result.aggregate;
  io.stdout.write(
    [
      ...(result.stoppedEarly ? ['stopped early: the figures cover the calls placed until then'] : []),
      `calls: ${a.calls.total}, ok ${a.calls.ok}, failed ${a.calls.failed} (${
        Object.entries(a.calls.byOutcome)
          .map(([k, v]) => `${k} ${v}`)
          .join(', ') || 'none placed'
      })`,
      `first bot audio:  ${ms(a.firstBotAudioMs)}`,
      `reply latency:    ${ms(a.replyLatencyMs)}`,
      `barge-in latency: ${ms(a.bargeInLatencyMs)}`,
      `audio after clear: ${ms(a.lateAudioMs)}`,
      `bot stops: ${a.stops.resumed} resumed (nothing lost), ${a.stops.cut} cut off (over noise alone: words lost)`,
      `gaps in bot audio: ${a.underruns.total} in ${a.underruns.callsWithAny} calls, longest ${a.underruns.longestMs} ms`,
      ...(a.toolCalls.total > 0
        ? [`function calls: ${a.toolCalls.total} in ${a.toolCalls.callsWithAny} calls, ${a.toolCalls.failed} failed`]
        : []),
      ...(receiver
        ? [
            `function receiver: ${Object.values(receiver.requests).reduce((n, c) => n + c, 0)} requests (${
              Object.entries(receiver.requests)
                .map(([name, n]) => `${name} ${n}`)
                .join(', ') || 'none'
            })`,
          ]
        : []),
      `protocol violations: ${a.violations}`,
      `generator clock lag: max ${a.generatorClockMaxLagMs} ms`,
      ...(a.generatorOverloaded
        ? [
            `warning: the load generator itself was overloaded (its 20 ms clock lagged up to ${a.generatorClockMaxLagMs} ms), so latencies include its own delay; use more --workers, fewer calls, or another machine`,
          ]
        : []),
      ...result.generatorErrors.map((e) => `warning: ${e}`),
      `reports: ${files.json}, ${files.html}`,
      '',
    ].join('\n'),
  );
  const connected = a.calls.total - (a.calls.byOutcome['connect-failed'] ?? 0);
  return a.calls.total > 0 && connected === 0 ? 1 : 0;
}
