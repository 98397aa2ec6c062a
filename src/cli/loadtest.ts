import { readFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import type { Distribution } from '../loadtest/aggregate.js';
import { type LoadProgress, runLoadTest } from '../loadtest/run-loadtest.js';
import { type LoadTestReport, writeReports } from '../loadtest/report-file.js';
import { loadScenarioClips } from '../simulator/clip-file.js';
import type { PhoneCallTarget } from '../simulator/phone-call.js';
import { parseScenario } from '../simulator/scenario.js';

const DEFAULT_SCENARIO = fileURLToPath(new URL('../../scenarios/default.json', import.meta.url));

const HELP = `usage: switchboard loadtest (--server URL --config ID | --wss URL | --url WEBHOOK) [options]

Places many simulated phone calls at once against a running Switchboard, each playing a scenario
of recorded speech the way Twilio streams it, and reports what callers experienced: time to the
first bot audio, reply latency, barge-in latency, audio heard after a clear, gaps in the bot's
audio, protocol violations and failed calls. The calls run in worker threads.

target (one of):
  --server <url> --config <id>  a telephony configuration on that server (its media websocket)
  --wss <url>                   a media stream URL (a configuration's wssUrl)
  --url <url>                   a TwiML voice webhook (e.g. https://host/twilio/voice/<id>)

load:
  --concurrency <n>      simultaneous calls (default 10)
  --calls <n>            calls in all (default: --concurrency)
  --duration-s <s>       instead of --calls: keep --concurrency calls up for this long
  --ramp-up-s <s>        start the first calls evenly over this long (default 5)
  --scenario <file>      a scenario JSON file (default scenarios/default.json: greeting, a
                         question, a barge-in during the answer, DTMF, hang-up); clip paths are
                         relative to the file
  --workers <n>          generator threads (default one per 100 simultaneous calls)
  --auth-token <token>   sign webhooks and upgrades (X-Twilio-Signature); default $TWILIO_AUTH_TOKEN

output:
  --out <dir>            where report.json and report.html go (default ./loadtest-report-<time>)
  --quiet                no live progress
  -h, --help             show this text

exit status: 0 when the run completed (failed calls are results), 1 when no call connected,
2 for bad options.
`;

export interface LoadtestIo {
  stdout: { write(text: string): unknown; isTTY?: boolean };
  stderr: { write(text: string): unknown };
}

class UsageError extends Error {}

function positive(name: string, value: string | undefined, fallback?: number): number | undefined {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isFinite(n) || n <= 0) throw new UsageError(`--${name} must be a positive number, got "${value}"`);
  return n;
}

function targetOf(values: Record<string, string | boolean | undefined>): { target: PhoneCallTarget; label: string } {
  const server = values.server as string | undefined;
  const config = values.config as string | undefined;
  const wss = values.wss as string | undefined;
  const url = values.url as string | undefined;
  const given = [server || config ? 'server' : undefined, wss, url].filter(Boolean).length;
  if (given !== 1) throw new UsageError('give exactly one target: --server with --config, --wss, or --url');
  if (wss) return { target: { wssUrl: wss }, label: wss };
  if (url) return { target: { webhookUrl: url }, label: url };
  if (!server || !config) throw new UsageError('--server and --config go together');
  const base = server.replace(/\/+$/, '').replace(/^http/i, 'ws');
  return { target: { wssUrl: `${base}/ws/twilio/${encodeURIComponent(config)}` }, label: `${server} configuration ${config}` };
}

function ms(d: Distribution): string {
  return d.count === 0 ? '—' : `p50 ${d.p50} / p95 ${d.p95} / p99 ${d.p99} / max ${d.max} ms (n=${d.count})`;
}

function progressLine(p: LoadProgress): string {
  const reply = p.replyLatencyP50Ms === null ? '—' : `${p.replyLatencyP50Ms}/${p.replyLatencyP95Ms} ms`;
  const barge = p.bargeInLatencyP50Ms === null ? '—' : `${p.bargeInLatencyP50Ms} ms`;
  return `${(p.elapsedMs / 1000).toFixed(0).padStart(4)} s  active ${String(p.active).padStart(4)}  done ${String(p.done).padStart(5)}  failed ${String(p.failed).padStart(4)}  reply p50/p95 ${reply}  barge-in p50 ${barge}`;
}

/** `switchboard loadtest`. */
export async function runLoadtestCli(argv: string[], io: LoadtestIo = process): Promise<number> {
  let values: Record<string, string | boolean | undefined>;
  try {
    values = parseArgs({
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
        out: { type: 'string' },
        quiet: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
    }).values;
  } catch (err) {
    io.stderr.write(`switchboard loadtest: ${err instanceof Error ? err.message : String(err)}\n\n${HELP}`);
    return 2;
  }
  if (values.help) {
    io.stdout.write(HELP);
    return 0;
  }

  let plan: Parameters<typeof runLoadTest>[0];
  let label: string;
  let scenarioPath: string;
  try {
    const target = targetOf(values);
    label = target.label;
    scenarioPath = resolve((values.scenario as string | undefined) ?? DEFAULT_SCENARIO);
    const scenario = parseScenario(JSON.parse(await readFile(scenarioPath, 'utf8')));
    const clips = await loadScenarioClips(scenario, dirname(scenarioPath));
    const concurrency = Math.round(positive('concurrency', values.concurrency as string | undefined, 10)!);
    const durationS = positive('duration-s', values['duration-s'] as string | undefined);
    if (durationS !== undefined && values.calls !== undefined) throw new UsageError('give --calls or --duration-s, not both');
    plan = {
      target: target.target,
      scenario,
      clips,
      concurrency,
      calls: values.calls === undefined ? undefined : Math.round(positive('calls', values.calls as string)!),
      durationMs: durationS === undefined ? undefined : durationS * 1000,
      rampUpMs: (values['ramp-up-s'] === undefined ? 5 : Number(values['ramp-up-s'])) * 1000,
      workers: values.workers === undefined ? undefined : Math.round(positive('workers', values.workers as string)!),
      authToken: (values['auth-token'] as string | undefined) ?? process.env.TWILIO_AUTH_TOKEN,
    };
    if (!Number.isFinite(plan.rampUpMs) || plan.rampUpMs < 0) throw new UsageError('--ramp-up-s must be zero or more');
  } catch (err) {
    io.stderr.write(`switchboard loadtest: ${err instanceof Error ? err.message : String(err)}\n`);
    return 2;
  }

  const tty = io.stdout.isTTY === true && !values.quiet;
  let lastPlainMs = -Infinity;
  plan.onProgress = (p) => {
    if (values.quiet) return;
    if (tty) io.stdout.write(`\r${progressLine(p)}\u001b[K`);
    else if (p.elapsedMs - lastPlainMs >= 5000) {
      lastPlainMs = p.elapsedMs;
      io.stdout.write(`${progressLine(p)}\n`);
    }
  };
  io.stdout.write(`load test: ${label}, ${plan.concurrency} simultaneous, ${plan.durationMs === undefined ? `${plan.calls ?? plan.concurrency} calls` : `${plan.durationMs / 1000} s`}\n`);
  const result = await runLoadTest(plan);
  if (tty) io.stdout.write('\n');

  const report: LoadTestReport = {
    startedAt: result.startedAt,
    elapsedMs: result.elapsedMs,
    target: label,
    scenarioName: scenarioPath,
    options: { concurrency: plan.concurrency, calls: plan.calls, durationMs: plan.durationMs, rampUpMs: plan.rampUpMs, workers: plan.workers ?? Math.ceil(plan.concurrency / 100) },
    aggregate: result.aggregate,
    calls: result.calls,
  };
  const dir = (values.out as string | undefined) ?? `loadtest-report-${result.startedAt.replace(/[:.]/g, '-')}`;
  const files = await writeReports(report, dir);
  const a = result.aggregate;
  io.stdout.write(
    [
      `calls: ${a.calls.total}, ok ${a.calls.ok}, failed ${a.calls.failed} (${Object.entries(a.calls.byOutcome).map(([k, v]) => `${k} ${v}`).join(', ')})`,
      `first bot audio:  ${ms(a.firstBotAudioMs)}`,
      `reply latency:    ${ms(a.replyLatencyMs)}`,
      `barge-in latency: ${ms(a.bargeInLatencyMs)}`,
      `audio after clear: ${ms(a.lateAudioMs)}`,
      `gaps in bot audio: ${a.underruns.total} in ${a.underruns.callsWithAny} calls, longest ${a.underruns.longestMs} ms`,
      `protocol violations: ${a.violations}`,
      ...(a.generatorClockMaxLagMs > 50 ? [`warning: the load generator's clock lagged up to ${a.generatorClockMaxLagMs} ms; use more --workers or another machine`] : []),
      `reports: ${files.json}, ${files.html}`,
      '',
    ].join('\n'),
  );
  return a.calls.total > 0 && a.calls.byOutcome['connect-failed'] === a.calls.total ? 1 : 0;
}
