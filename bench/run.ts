import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { createEmulators } from '../src/cli/emulate.js';
import { startEmulatorServer } from '../src/emulators/emulator-server.js';
import type { EmulatorLatencies } from '../src/emulators/types.js';
import { BENCH_REPLY, runLatencyPhase } from './latency.js';
import { BENCH_API_KEY, createBotConfig, startServerProcess } from './server-process.js';
import { type BudgetRow, formatTable, percentile } from './report.js';

/**
 * `npm run bench`: the server (built, in its own process) against the vendor emulators at fixed,
 * known latency, with the figures of DESIGN.md section 7 beside their budgets. A script, not a
 * test: it prints and writes JSON, and never fails on a slow machine.
 */

const { values: args } = parseArgs({
  options: {
    calls: { type: 'string', default: '12' },
    concurrency: { type: 'string', default: '3' },
    out: { type: 'string', default: 'bench-report.json' },
  },
});

const LATENCIES: EmulatorLatencies = {
  sttFinalDelayMs: 150,
  llmFirstTokenMs: 200,
  llmTokensPerSec: 50,
  ttsFirstByteMs: 100,
  ttsRealTimeFactor: 2,
};
const START_SECS = 0.2;
const FIXTURES = fileURLToPath(new URL('../fixtures/audio', import.meta.url));

async function main(): Promise<void> {
  const emulators = await startEmulatorServer(createEmulators({ latencies: LATENCIES, transcripts: ['do you have a table', 'go forward'], replies: [BENCH_REPLY], apiKey: undefined }));
  const vendors = emulators.url;
  const server = await startServerProcess({
    SWITCHBOARD_DEEPGRAM_URL: vendors,
    SWITCHBOARD_OPENAI_URL: vendors,
    SWITCHBOARD_CARTESIA_URL: vendors,
  });
  try {
    const id = await createBotConfig(server.baseUrl, {
      bot_profile: 'telephony_ws_voice_2024_09',
      services: { stt: 'deepgram', llm: 'openai', tts: 'cartesia' },
      config: [
        { service: 'vad', options: [{ name: 'params', value: { start_secs: START_SECS } }] },
        { service: 'llm', options: [{ name: 'initial_messages', value: [{ role: 'system', content: 'You are a host.' }] }, { name: 'run_on_config', value: true }] },
      ],
      api_keys: { deepgram: 'bench', openai: 'bench', cartesia: 'bench' },
    });
    const wssUrl = `${server.baseUrl.replace(/^http/, 'ws')}/ws/twilio/${id}`;
    process.stdout.write(`latency phase: ${args.calls} calls, ${args.concurrency} at a time, emulated providers at LLM first token ${LATENCIES.llmFirstTokenMs} ms, TTS first byte ${LATENCIES.ttsFirstByteMs} ms\n`);
    const latency = await runLatencyPhase({
      wssUrl,
      calls: Number(args.calls),
      concurrency: Number(args.concurrency),
      latencies: LATENCIES,
      serverCalls: server.calls,
      fixturesDir: FIXTURES,
    });

    const rows: BudgetRow[] = [
      { figure: 'bridge overhead per turn, p95 (first frame sent minus provider latency)', unit: 'ms', measured: percentile(latency.bridgeOverheadMs, 95), budget: '< 30', ok: (v) => v < 30, samples: latency.bridgeOverheadMs.length },
      { figure: 'first TTS byte in to first media frame out, p95', unit: 'ms', measured: percentile(latency.ttsToFrameMs, 95), budget: '< 2', ok: (v) => v < 2, samples: latency.ttsToFrameMs.length },
      { figure: 'first TTS byte in to first media frame out, max', unit: 'ms', measured: percentile(latency.ttsToFrameMs, 100), budget: '< 2', ok: (v) => v < 2, samples: latency.ttsToFrameMs.length },
      { figure: 'barge-in: caller speech onset to clear received, p95', unit: 'ms', measured: percentile(latency.bargeInLatencyMs, 95), budget: `< ${START_SECS * 1000 + 40} (start_secs + 40)`, ok: (v) => v < START_SECS * 1000 + 40, samples: latency.bargeInLatencyMs.length },
      { figure: 'audio of a cancelled reply received after clear, total', unit: 'ms', measured: latency.lateAudioMs.reduce((a, b) => a + b, 0), budget: '0', ok: (v) => v === 0, samples: latency.lateAudioMs.length },
      { figure: 'reply latency heard by the caller, p50 (last voiced frame to first bot audio; includes stop_secs and providers)', unit: 'ms', measured: percentile(latency.replyLatencyMs, 50), budget: 'report', samples: latency.replyLatencyMs.length },
      { figure: 'reply latency heard by the caller, p95', unit: 'ms', measured: percentile(latency.replyLatencyMs, 95), budget: 'report', samples: latency.replyLatencyMs.length },
      { figure: 'calls failed / protocol violations', unit: '', measured: latency.failedCalls + latency.violations, budget: '0', ok: (v) => v === 0, samples: Number(args.calls) },
    ];
    process.stdout.write(`\n${formatTable(rows)}\n`);
    writeFileSync(
      args.out,
      `${JSON.stringify({ machine: machineInfo(), latencies: LATENCIES, startSecs: START_SECS, figures: rows.map(({ ok, ...row }) => ({ ...row, withinBudget: ok && row.measured !== null ? ok(row.measured) : null })), samples: latency }, null, 2)}\n`,
    );
    process.stdout.write(`\nwrote ${args.out}\n`);
  } finally {
    await server.stop();
    await emulators.close();
  }
  void BENCH_API_KEY;
}

function machineInfo(): Record<string, unknown> {
  return { node: process.version, platform: process.platform, arch: process.arch, cpus: (globalThis as { navigator?: { hardwareConcurrency?: number } }).navigator?.hardwareConcurrency };
}

main().catch((err: unknown) => {
  process.stderr.write(`bench failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exitCode = 1;
});
