import { type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import type { CallSummary } from '../src/pipeline/call-metrics.js';
import type { CallReport } from '../src/tools/simulator/call-report.js';
import { readMulawFile } from '../src/tools/simulator/clip-file.js';
import { runPhoneCall } from '../src/tools/simulator/phone-call.js';
import type { Scenario } from '../src/tools/simulator/scenario.js';
import { startEmulateProcess } from './capacity.js';
import { cpuPinning } from './cpu-pinning.js';
import { BENCH_LATENCIES, BENCH_REPLY } from './latency.js';
import { type BudgetRow, formatTable, percentile } from './report.js';
import { createBotConfig, startServerProcess } from './server-process.js';

/**
 * The function-call phase of `npm run bench` (alone: `npm run bench:functions`): answers that need
 * one function, beside plain answers, on the same emulated vendors. The model's first pass calls
 * `check_table`, a webhook on this process answers after WEBHOOK_MS, and the model's second pass
 * answers. The server's `call ended` lines split the time from the end of the caller's turn to
 * the first frame sent into the model's first pass (to the call), the webhook (the call to its
 * result) and the second pass (the result to the first frame: the model's first token and the
 * voice's first audio).
 */

/** The webhook's own time, ms. */
export const WEBHOOK_MS = 200;

const SCENARIO: Scenario = {
  steps: [
    { do: 'play', clip: 'question' },
    { do: 'wait-bot-audio', timeoutMs: 15_000 },
    { do: 'wait-bot-silence', ms: 600, timeoutMs: 30_000 },
  ],
  waitTimeoutMs: 15_000,
};

export interface FunctionCallSamples {
  /** Server, per answer: end of the caller's turn to the first frame sent. */
  firstFrameMs: number[];
  /** Of which: to the function call (the model's first pass). */
  modelMs: number[];
  /** The function call to its result (the webhook, seen from the server). */
  webhookMs: number[];
  /** The result to the first frame sent (the model's second pass and the voice). */
  secondPassMs: number[];
  /** Caller: last voiced frame to the first bot audio. */
  replyLatencyMs: number[];
  /** The same two figures for plain answers (no function) on the same vendors. */
  plainFirstFrameMs: number[];
  plainReplyLatencyMs: number[];
  failedCalls: number;
}

/** `switchboard emulate` arguments for the bench's pace, with `replies` as the script. */
function emulatorArgs(replies: string[]): string[] {
  const l = BENCH_LATENCIES;
  return [
    ...['--stt-final-delay-ms', String(l.sttFinalDelayMs), '--llm-first-token-ms', String(l.llmFirstTokenMs)],
    ...['--llm-tokens-per-sec', String(l.llmTokensPerSec), '--tts-first-byte-ms', String(l.ttsFirstByteMs)],
    ...['--tts-real-time-factor', String(l.ttsRealTimeFactor), '--transcript', 'do you have a table'],
    ...replies,
  ];
}

async function startWebhook(): Promise<{ url: string; close(): Promise<void> }> {
  const server: Server = createServer((req, res) => {
    req.resume();
    req.on('end', () =>
      setTimeout(() => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end('{"free":true,"table":12}');
      }, WEBHOOK_MS),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, 'localhost', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://localhost:${port}/check_table`,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

export async function runFunctionCallPhase(options: {
  baseUrl: string;
  calls: number;
  concurrency: number;
  serverCalls: CallSummary[];
  fixturesDir: string;
  loadCpus?: string;
}): Promise<FunctionCallSamples> {
  const toolReply = JSON.stringify({ tool_calls: [{ name: 'check_table', arguments: { people: 2 } }] });
  const [withTool, plain, webhook] = await Promise.all([
    startEmulateProcess(
      emulatorArgs(['--reply-json', toolReply, '--after-tool-results', BENCH_REPLY]),
      options.loadCpus,
    ),
    startEmulateProcess(emulatorArgs(['--reply', BENCH_REPLY]), options.loadCpus),
    startWebhook(),
  ]);
  try {
    const config = (vendors: string, tools: boolean) =>
      createBotConfig(options.baseUrl, {
        bot_profile: 'telephony_ws_voice_2024_09',
        services: { stt: 'deepgram', llm: 'openai', tts: 'cartesia' },
        config: [
          {
            service: 'llm',
            options: [
              { name: 'initial_messages', value: [{ role: 'system', content: 'You are a host.' }] },
              ...(tools
                ? [
                    {
                      name: 'tools',
                      value: [
                        {
                          type: 'function',
                          function: {
                            name: 'check_table',
                            parameters: { type: 'object', properties: { people: { type: 'integer' } } },
                          },
                        },
                      ],
                    },
                  ]
                : []),
            ],
          },
        ],
        ...(tools ? { webhook_tools: { check_table: { url: webhook.url } } } : {}),
        service_options: {
          deepgram: { base_url: vendors },
          openai: { base_url: vendors },
          cartesia: { base_url: vendors },
        },
        api_keys: { deepgram: 'bench', openai: 'bench', cartesia: 'bench' },
      });
    const streamUrl = (id: string) => `${options.baseUrl.replace(/^http/, 'ws')}/ws/twilio/${id}`;
    const clips = { question: { mulaw: await readMulawFile(`${options.fixturesDir}/A06_birch_canoe.ulaw`) } };
    const samples: FunctionCallSamples = {
      firstFrameMs: [],
      modelMs: [],
      webhookMs: [],
      secondPassMs: [],
      replyLatencyMs: [],
      plainFirstFrameMs: [],
      plainReplyLatencyMs: [],
      failedCalls: 0,
    };
    for (const tools of [true, false]) {
      const wssUrl = streamUrl(await config(tools ? withTool.url : plain.url, tools));
      const first = options.serverCalls.length;
      const reports = await callsInParallel(wssUrl, clips, options.calls, options.concurrency);
      const deadline = Date.now() + 5000;
      while (options.serverCalls.length - first < options.calls && Date.now() < deadline)
        await new Promise((resolve) => setTimeout(resolve, 50));
      for (const report of reports) {
        if (report.outcome !== 'completed') samples.failedCalls += 1;
        const latency = report.metrics.utterances[0]?.replyLatencyMs;
        if (latency != null) (tools ? samples.replyLatencyMs : samples.plainReplyLatencyMs).push(latency);
      }
      for (const call of options.serverCalls.slice(first)) {
        for (const turn of call.perTurn) {
          if (turn.kind !== 'answer' || turn.firstFrameSentMs === undefined) continue;
          if (!tools) {
            samples.plainFirstFrameMs.push(turn.firstFrameSentMs);
            continue;
          }
          if (turn.toolsStartedMs === undefined || turn.toolsDoneMs === undefined) continue;
          samples.firstFrameMs.push(turn.firstFrameSentMs);
          samples.modelMs.push(turn.toolsStartedMs);
          samples.webhookMs.push(turn.toolsDoneMs - turn.toolsStartedMs);
          samples.secondPassMs.push(turn.firstFrameSentMs - turn.toolsDoneMs);
        }
      }
    }
    return samples;
  } finally {
    await Promise.all([withTool.stop(), plain.stop(), webhook.close()]);
  }
}

async function callsInParallel(
  wssUrl: string,
  clips: Parameters<typeof runPhoneCall>[0]['clips'],
  calls: number,
  concurrency: number,
): Promise<CallReport[]> {
  const reports: CallReport[] = [];
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < calls) {
      next += 1;
      reports.push(await runPhoneCall({ target: { wssUrl }, scenario: SCENARIO, clips }));
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return reports;
}

/** The phase's figures, for the bench's table. */
export function functionCallRows(s: FunctionCallSamples): BudgetRow[] {
  const row = (figure: string, values: number[]): BudgetRow => ({
    figure,
    unit: 'ms',
    measured: percentile(values, 50),
    budget: 'report',
    samples: values.length,
  });
  return [
    row('plain answer: end of the caller’s turn to the first frame sent, p50', s.plainFirstFrameMs),
    row('answer with one function: end of the caller’s turn to the first frame sent, p50', s.firstFrameMs),
    row('  of which the model’s first pass (to the function call), p50', s.modelMs),
    row(`  of which the webhook (answers after ${WEBHOOK_MS} ms), p50`, s.webhookMs),
    row('  of which the second pass (result to first frame: model and voice), p50', s.secondPassMs),
    row('plain answer: heard by the caller (last voiced frame to first bot audio), p50', s.plainReplyLatencyMs),
    row('answer with one function: heard by the caller, p50', s.replyLatencyMs),
    {
      figure: 'function-call phase: calls failed',
      unit: '',
      measured: s.failedCalls,
      budget: '0',
      ok: (v) => v === 0,
      samples: s.replyLatencyMs.length + s.plainReplyLatencyMs.length,
    },
  ];
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: { calls: { type: 'string', default: '6' }, concurrency: { type: 'string', default: '2' } },
  });
  const pinning = cpuPinning();
  const server = await startServerProcess({ SWITCHBOARD_PROVIDER_ALLOW_PRIVATE: 'true' }, [], pinning.server);
  try {
    const samples = await runFunctionCallPhase({
      baseUrl: server.baseUrl,
      calls: Number(values.calls),
      concurrency: Number(values.concurrency),
      serverCalls: server.calls,
      fixturesDir: fileURLToPath(new URL('../fixtures/audio', import.meta.url)),
      loadCpus: pinning.load,
    });
    process.stdout.write(`${formatTable(functionCallRows(samples))}\n`);
  } finally {
    await server.stop();
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  main().catch((err: unknown) => {
    process.stderr.write(`bench failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exitCode = 1;
  });
}
