import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { runLoadtestCli } from '../../src/cli/loadtest.js';
import { type LoadProgress, runLoadTest } from '../../src/tools/loadtest/run-loadtest.js';
import { loadScenarioClips } from '../../src/tools/simulator/clip-file.js';
import { parseScenario } from '../../src/tools/simulator/scenario.js';
import { ScriptedLlm, ScriptedStt, ToneTts } from '../fakes/scripted-providers.js';
import { type CallServer, startCallServer } from '../helpers/call-server.js';
import { freePort } from '../helpers/free-port.js';
import { runCli } from '../helpers/cli-process.js';
import { removeDir, tempDataDir } from '../helpers/test-data.js';

const SCENARIO = fileURLToPath(new URL('../../scenarios/default.json', import.meta.url));
const FUNCTION_SCENARIO = fileURLToPath(new URL('../../scenarios/function-calls.json', import.meta.url));
const LONG_REPLY =
  'Certainly, we have rooms with a view of the harbour and rooms with a garden terrace, all with breakfast.';

let server: CallServer | undefined;
const dirs: string[] = [];

afterEach(async () => {
  await server?.close();
  server = undefined;
  for (const dir of dirs.splice(0)) removeDir(dir);
});

async function startBot(): Promise<{ id: string; wssUrl: string }> {
  server = await startCallServer((registry) => {
    // Providers per call, as real ones are: the load test runs calls side by side.
    registry
      .registerStt('scripted_stt', () => new ScriptedStt(['do you have rooms', 'go forward']))
      .registerLlm(
        'scripted_llm',
        () =>
          new ScriptedLlm({
            replies: ['Welcome to the harbour hotel.', LONG_REPLY, 'Of course.', 'Connecting you now.'],
          }),
      )
      .registerTts('tone_tts', () => new ToneTts());
  });
  return server.createConfig({
    services: { stt: 'scripted_stt', llm: 'scripted_llm', tts: 'tone_tts' },
    config: [{ service: 'llm', options: [{ name: 'run_on_config', value: true }] }],
  });
}

describe('switchboard loadtest', () => {
  it('runs simultaneous calls of the default scenario from worker threads, through the voice webhook, and measures each', async () => {
    const { id } = await startBot();
    const scenario = parseScenario(JSON.parse(readFileSync(SCENARIO, 'utf8')));
    const clips = await loadScenarioClips(scenario, join(SCENARIO, '..'));
    const progress: LoadProgress[] = [];
    const result = await runLoadTest({
      target: { webhookUrl: `${server!.baseUrl}/twilio/voice/${id}` },
      scenario,
      clips,
      concurrency: 3,
      rampUpMs: 500,
      workers: 2,
      onProgress: (p) => progress.push(p),
    });

    expect(result.workers).toBe(2);
    expect(result.stoppedEarly).toBe(false);
    expect(result.calls.map((c) => c.index)).toEqual([0, 1, 2]);
    // Ramp-up: the three calls are started 500/3 ms apart, not all at once. Checked as each call's
    // earliest start in the run (a timer never fires more than a millisecond early), not as the gap
    // between two starts: a first start held up by a busy machine narrowed that gap to 283 ms once.
    expect(result.calls[1]!.startedAtMs).toBeGreaterThanOrEqual(165);
    expect(result.calls[2]!.startedAtMs).toBeGreaterThanOrEqual(332);
    const a = result.aggregate;
    expect(a.calls).toMatchObject({ total: 3, ok: 3, failed: 0 });
    expect(a.firstBotAudioMs.count).toBe(3);
    // Each call: the question is answered; the interruption barges in and is cleared.
    expect(a.replyLatencyMs.count).toBeGreaterThanOrEqual(3);
    expect(a.bargeInLatencyMs.count).toBe(3);
    expect(a.lateAudioMs.max).toBe(0);
    expect(a.violations).toBe(0);
    expect(progress.at(-1)).toMatchObject({ active: 0, done: 3, failed: 0 });
    // Live figures come from calls still in progress, before any has ended.
    expect(progress.some((p) => p.done === 0 && p.active === 3 && p.replyLatencyP50Ms !== null)).toBe(true);
    for (const call of result.calls) {
      expect(call.timeline.some((e) => e.kind === 'clear-received')).toBe(true);
      expect(call.timeline.some((e) => e.kind === 'dtmf-sent')).toBe(true);
    }
  });

  it('from the command line: progress, a summary, and JSON and HTML reports', async () => {
    const { id } = await startBot();
    const out = tempDataDir();
    dirs.push(out);
    const run = await runCli(
      [
        'loadtest',
        '--server',
        server!.baseUrl,
        '--config',
        id,
        '--calls',
        '2',
        '--concurrency',
        '2',
        '--ramp-up-s',
        '0.2',
        '--out',
        out,
      ],
      {},
    );
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('calls: 2, ok 2, failed 0');
    expect(run.stdout).toMatch(/reply latency: +p50 \d+/);
    // Not a terminal: progress comes as plain lines, one a second.
    expect(run.stdout).toMatch(/^ +\d+ s {2}active +\d+ {2}done +\d+ {2}failed +\d+ {2}reply p50\/p95 /m);

    const report = JSON.parse(readFileSync(join(out, 'report.json'), 'utf8'));
    expect(report.config).toMatchObject({ concurrency: 2, calls: 2, workers: 1, rampUpMs: 200 });
    expect(report.config.scenario.steps.length).toBeGreaterThan(0);
    expect(report.aggregate.calls).toMatchObject({ total: 2, ok: 2 });
    expect(report.aggregate.replyLatencyMs.count).toBeGreaterThanOrEqual(2);
    expect(report.aggregate.bargeInLatencyMs.count).toBe(2);
    expect(report.calls).toHaveLength(2);
    expect(
      report.calls[0].timeline.filter((e: { kind: string }) => e.kind === 'clear-received').length,
    ).toBeGreaterThanOrEqual(1);
    const html = readFileSync(join(out, 'report.html'), 'utf8');
    expect(html).toContain('<svg');
    expect(html).toContain('Reply latency');
    // Self-contained: nothing fetched from elsewhere.
    expect(html).not.toMatch(/<script|<link|src=/);
    expect(existsSync(join(out, 'report.html'))).toBe(true);
  });

  it('a scenario whose answers need a function: the load test answers the webhooks itself and counts the calls', async () => {
    const receiverPort = await freePort();
    server = await startCallServer((registry) => {
      registry
        .registerStt('scripted_stt', () => new ScriptedStt(['a table for two please', 'thank you']))
        .registerLlm(
          'scripted_llm',
          () =>
            new ScriptedLlm({
              replies: [
                'Welcome to the harbour restaurant.',
                { text: 'Let me book that.', calls: [{ name: 'book_table', arguments: { party: 2 } }] },
                'You are booked.',
                'You are welcome.',
              ],
            }),
        )
        .registerTts('tone_tts', () => new ToneTts());
    });
    const { id } = await server.createConfig({
      services: { stt: 'scripted_stt', llm: 'scripted_llm', tts: 'tone_tts' },
      config: [
        {
          service: 'llm',
          options: [
            { name: 'run_on_config', value: true },
            {
              name: 'tools',
              value: [{ type: 'function', function: { name: 'book_table', parameters: { type: 'object' } } }],
            },
          ],
        },
      ],
      webhook_tools: { book_table: { url: `http://localhost:${receiverPort}/book_table` } },
    });
    const out = tempDataDir();
    dirs.push(out);
    const run = await runCli(
      [
        'loadtest',
        '--server',
        server.baseUrl,
        '--config',
        id,
        '--calls',
        '2',
        '--concurrency',
        '2',
        '--ramp-up-s',
        '0.2',
        '--scenario',
        FUNCTION_SCENARIO,
        '--function-receiver-port',
        String(receiverPort),
        '--quiet',
        '--out',
        out,
      ],
      {},
    );
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(run.stdout).toContain(`function receiver: http://localhost:${receiverPort}/<function>`);
    expect(run.stdout).toContain('calls: 2, ok 2, failed 0');
    // What the callers' streams showed, and what the receiver got, agree: one booking per call.
    expect(run.stdout).toContain('function calls: 2 in 2 calls, 0 failed');
    expect(run.stdout).toContain('function receiver: 2 requests (book_table 2)');
    const report = JSON.parse(readFileSync(join(out, 'report.json'), 'utf8'));
    expect(report.aggregate.toolCalls).toEqual({ total: 2, failed: 0, callsWithAny: 2 });
    expect(readFileSync(join(out, 'report.html'), 'utf8')).toContain('function calls');
  });

  it('for a duration, keeps the calls up by starting a new one as each ends, then hangs up the rest', async () => {
    const { wssUrl } = await startBot();
    // Calls of about 600 ms: in 2.5 s each of the two slots places several.
    const scenario = parseScenario({ steps: [{ do: 'wait', ms: 600 }] });
    const result = await runLoadTest({
      target: { wssUrl },
      scenario,
      clips: {},
      concurrency: 2,
      durationMs: 2500,
      rampUpMs: 0,
    });

    const a = result.aggregate;
    expect(a.calls.total).toBeGreaterThanOrEqual(4);
    expect(a.calls.failed).toBe(0);
    expect(a.calls.byOutcome.completed).toBeGreaterThanOrEqual(2);
    // Never more than two at once: each call after the first two starts once an earlier one ended.
    const ends = result.calls.map((c) => c.startedAtMs + c.durationMs).sort((x, y) => x - y);
    for (const call of result.calls.slice(2))
      expect(ends.filter((end) => end <= call.startedAtMs + 50).length).toBeGreaterThanOrEqual(call.index - 1);
    expect(result.calls.every((c) => c.startedAtMs < 2600)).toBe(true);
  });

  it('exits 1 when no call could connect and 2 for bad options, with a clear message', async () => {
    const out = tempDataDir();
    dirs.push(out);
    const io = () => {
      const text = { stdout: '', stderr: '' };
      return {
        text,
        io: {
          stdout: { write: (t: string) => (text.stdout += t) },
          stderr: { write: (t: string) => (text.stderr += t) },
        },
      };
    };
    const nobody = `ws://127.0.0.1:${await freePort()}/ws/twilio/none`;
    const dead = io();
    expect(await runLoadtestCli(['--wss', nobody, '--calls', '2', '--ramp-up-s', '0', '--out', out], dead.io)).toBe(1);
    expect(dead.text.stdout).toContain('calls: 2, ok 0, failed 2 (connect-failed 2)');
    expect(existsSync(join(out, 'report.json'))).toBe(true);

    const usage = async (args: string[], message: string) => {
      const run = io();
      expect(await runLoadtestCli(args, run.io)).toBe(2);
      expect(run.text.stderr).toContain(message);
    };
    await usage(['--server', 'localhost:8080', '--config', 'x'], '--server must be a http/https/ws/wss URL');
    await usage(['--server', 'http://h'], '--server and --config go together');
    await usage(['--wss', nobody, '--url', 'http://h/twilio/voice/x'], 'give exactly one target');
    await usage(['--wss', 'http://h/ws'], '--wss must be a ws/wss URL');
    await usage(['--wss', nobody, '--calls', '3', '--duration-s', '5'], 'give --calls or --duration-s, not both');
    await usage(['--wss', nobody, '--concurrency', '0'], '--concurrency must be a positive number');
    await usage(['--wss', nobody, '--ramp-up-s=-1'], '--ramp-up-s must be zero or more');
    await usage(['--wss', nobody, '--bogus'], "Unknown option '--bogus'");
    const scenarioFile = join(out, 'broken.json');
    writeFileSync(scenarioFile, JSON.stringify({ steps: [{ do: 'play', clip: 'hello' }] }));
    await usage(['--wss', nobody, '--scenario', scenarioFile], 'steps play "hello" but "clips" does not define it');
    writeFileSync(scenarioFile, JSON.stringify({ steps: [{ do: 'dance' }] }));
    await usage(['--wss', nobody, '--scenario', scenarioFile], 'invalid scenario');
    await usage(['--wss', nobody, '--scenario', join(out, 'missing.json')], 'cannot read the scenario');

    const help = io();
    expect(await runLoadtestCli(['--help'], help.io)).toBe(0);
    for (const flag of [
      '--server',
      '--config',
      '--wss',
      '--url',
      '--concurrency',
      '--calls',
      '--duration-s',
      '--ramp-up-s',
      '--scenario',
      '--workers',
      '--auth-token',
      '--out',
      '--quiet',
    ]) {
      expect(help.text.stdout).toContain(flag);
    }
  });
});
