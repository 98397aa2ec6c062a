import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { runLoadTest } from '../../src/loadtest/run-loadtest.js';
import { loadScenarioClips } from '../../src/simulator/clip-file.js';
import { parseScenario } from '../../src/simulator/scenario.js';
import { ScriptedLlm, ScriptedStt, ToneTts } from '../fakes/scripted-providers.js';
import { type CallServer, startCallServer } from '../helpers/call-server.js';
import { runCli } from '../helpers/cli-process.js';
import { removeDir, tempDataDir } from '../helpers/test-app.js';

const SCENARIO = fileURLToPath(new URL('../../scenarios/default.json', import.meta.url));
const LONG_REPLY = 'Certainly, we have rooms with a view of the harbour and rooms with a garden terrace, all with breakfast.';

let server: CallServer | undefined;
const dirs: string[] = [];

afterEach(async () => {
  await server?.close();
  server = undefined;
  for (const dir of dirs.splice(0)) removeDir(dir);
});

async function startBot(): Promise<string> {
  server = await startCallServer((registry) => {
    // Providers per call, as real ones are: the load test runs calls side by side.
    registry
      .registerStt('scripted_stt', () => new ScriptedStt(['do you have rooms', 'go forward']))
      .registerLlm('scripted_llm', () => new ScriptedLlm({ replies: ['Welcome to the harbour hotel.', LONG_REPLY, 'Of course.', 'Connecting you now.'] }))
      .registerTts('tone_tts', () => new ToneTts());
  });
  const { wssUrl } = await server.createConfig({
    services: { stt: 'scripted_stt', llm: 'scripted_llm', tts: 'tone_tts' },
    config: [{ service: 'llm', options: [{ name: 'run_on_config', value: true }] }],
  });
  return wssUrl;
}

describe('switchboard loadtest', () => {
  it('runs simultaneous calls of the default scenario from worker threads and measures each', async () => {
    const wssUrl = await startBot();
    const scenario = parseScenario(JSON.parse(readFileSync(SCENARIO, 'utf8')));
    const clips = await loadScenarioClips(scenario, join(SCENARIO, '..'));
    const progress: number[] = [];
    const result = await runLoadTest({ target: { wssUrl }, scenario, clips, concurrency: 3, rampUpMs: 500, workers: 2, onProgress: (p) => progress.push(p.done) });

    expect(result.calls.map((c) => c.index)).toEqual([0, 1, 2]);
    const a = result.aggregate;
    expect(a.calls).toMatchObject({ total: 3, ok: 3, failed: 0 });
    expect(a.firstBotAudioMs.count).toBe(3);
    // Each call: the question is answered; the interruption barges in and is cleared.
    expect(a.replyLatencyMs.count).toBeGreaterThanOrEqual(3);
    expect(a.bargeInLatencyMs.count).toBe(3);
    expect(a.lateAudioMs.max).toBe(0);
    expect(a.violations).toBe(0);
    expect(progress.at(-1)).toBe(3);
    for (const call of result.calls) {
      expect(call.timeline.some((e) => e.kind === 'clear-received')).toBe(true);
      expect(call.timeline.some((e) => e.kind === 'dtmf-sent')).toBe(true);
    }
  });

  it('from the command line: progress, a summary, and JSON and HTML reports', async () => {
    const wssUrl = await startBot();
    const out = tempDataDir();
    dirs.push(out);
    const run = await runCli(['loadtest', '--wss', wssUrl, '--calls', '2', '--concurrency', '2', '--ramp-up-s', '0.2', '--out', out], {});
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('calls: 2, ok 2, failed 0');
    expect(run.stdout).toMatch(/reply latency: +p50 \d+/);

    const report = JSON.parse(readFileSync(join(out, 'report.json'), 'utf8'));
    expect(report.aggregate.calls.total).toBe(2);
    expect(report.calls).toHaveLength(2);
    const html = readFileSync(join(out, 'report.html'), 'utf8');
    expect(html).toContain('<svg');
    expect(html).toContain('Reply latency');
    // Self-contained: nothing fetched from elsewhere.
    expect(html).not.toMatch(/<script|<link|src=/);
    expect(existsSync(join(out, 'report.html'))).toBe(true);

    const bad = await runCli(['loadtest', '--wss', wssUrl, '--url', 'http://x'], {});
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('give exactly one target');
  });
});
