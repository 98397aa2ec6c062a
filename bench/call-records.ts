import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import pino from 'pino';
import type { BotConfigForCall } from '../src/bots/bot-config-service.js';
import { CallRecordsService } from '../src/records/call-records-service.js';
import { StatusCallbacks } from '../src/records/status-callback.js';
import type { CallSummary, TurnTimings } from '../src/pipeline/call-metrics.js';
import { webhookAddressPolicy } from '../src/security/address-policy.js';
import { AccountsRepo } from '../src/store/accounts-repo.js';
import { CallRecordsRepo } from '../src/store/call-records-repo.js';
import { openDatabase } from '../src/store/database.js';

/**
 * What call records cost: the CPU a call spends on its record (the events it reports, the
 * record built at its end, its two store writes) with the transcript on and off, beside the CPU
 * the call itself costs, and the store's write rate when 300 calls end within a minute. In
 * process, on a real SQLite store (or the PostgreSQL of DATABASE_URL). Part of `npm run bench`;
 * alone: `npx tsx bench/call-records.ts [--calls 300] [--turns 12]`. Prints, never fails.
 */

export interface CallRecordsFigures {
  /** CPU ms one call spends on its record, transcript on / off. */
  recordCpuMsPerCall: { transcript: number; noTranscript: number };
  /** The same as a share of the CPU the call itself costs (`callCpuPctOfCore` for `callSecs`). */
  shareOfCallPct: { transcript: number; noTranscript: number };
  /** 300 calls ending at once: how long until every record is written, and the rate. */
  burstWriteMs: number;
  writesPerSec: number;
  calls: number;
}

const log = pino({ level: 'silent' });

/** A call's worth of what the session reports: `turns` answers with caller speech before each, one cut. */
function playCall(service: CallRecordsService, config: BotConfigForCall, turns: number): () => void {
  const builder = service.begin({ kind: 'phone', config, log });
  const events = builder.events;
  builder.callStarted({ callSid: `CA${Math.random()}`, streamSid: 'MZ', customParameters: { from: '+15550100001' } });
  const summary: CallSummary = {
    durationMs: 0,
    turns,
    bargeIns: 1,
    falseAlarms: 0,
    pauses: 1,
    resumes: 0,
    pausedMs: [],
    providerErrors: 0,
    droppedTranscripts: 0,
    tools: {},
    dtmfDigits: 0,
    perTurn: [],
    suspicions: [],
  };
  for (let turn = 1; turn <= turns; turn++) {
    events.onUserSpeaking?.(true);
    events.onUserTranscript?.('could you tell me whether there is a table', false);
    events.onUserSpeaking?.(false);
    events.onUserTranscript?.('could you tell me whether there is a table for two tonight', true);
    const timings: TurnTimings = { turn, kind: 'answer', interrupted: false };
    builder.replyStarted(timings, performance.now() - 300, true);
    timings.llmFirstTokenMs = 450;
    events.onBotText?.('We have a table for two at eight, by the window.');
    events.onBotText?.('Shall I book it for you under your name?');
    timings.ttsFirstAudioMs = 620;
    timings.firstFrameSentMs = 630;
    if (turn === 2) {
      timings.interrupted = true;
      builder.replyPaused();
      builder.replyCut(timings, 1800, 2600, 'We have a table for two at eight, by…');
    } else events.onBotSpeaking?.(false);
    summary.perTurn.push({ ...timings });
  }
  return () => builder.callEnded('socket closed (1000)', false, summary);
}

export async function measureCallRecords(options: {
  calls: number;
  turns: number;
  /** The call's own CPU, % of a core, and how long the simulated call lasts. */
  callCpuPctOfCore: number;
  databaseUrl?: string;
}): Promise<CallRecordsFigures> {
  const dir = mkdtempSync(join(tmpdir(), 'switchboard-bench-records-'));
  const database = await openDatabase(dir, options.databaseUrl);
  try {
    const account = await new AccountsRepo(database.db).ensureAccount('bench');
    const service = new CallRecordsService({
      repo: new CallRecordsRepo(database.db),
      nodeId: 'bench-node',
      log,
      retentionDays: 30,
      statusCallbacks: new StatusCallbacks({ policy: webhookAddressPolicy(false), log }),
    });
    const config = (transcript: boolean): BotConfigForCall => ({
      id: 'bench-config',
      accountId: account.id,
      body: {
        bot_profile: 'telephony_ws_voice_2024_09',
        services: { stt: 'deepgram', llm: 'openai', tts: 'cartesia' },
        config: [],
        max_duration: 600,
        api_keys: {},
        service_options: {},
        call_record_settings: { transcript },
      } as unknown as BotConfigForCall['body'],
    });
    const cpuPerCall = async (transcript: boolean, calls: number) => {
      const before = process.cpuUsage();
      const enders: Array<() => void> = [];
      for (let i = 0; i < calls; i++) enders.push(playCall(service, config(transcript), options.turns));
      await service.drain();
      for (const end of enders) end();
      await service.drain();
      const used = process.cpuUsage(before);
      return (used.user + used.system) / 1000 / calls;
    };
    // Warm up (JIT, prepared statements), then measure each way.
    await cpuPerCall(true, 50);
    const transcriptMs = await cpuPerCall(true, options.calls);
    const noTranscriptMs = await cpuPerCall(false, options.calls);

    // 300 calls end within the same moment (the worst of "within a minute"): every record written.
    const enders: Array<() => void> = [];
    for (let i = 0; i < options.calls; i++) enders.push(playCall(service, config(true), options.turns));
    await service.drain();
    const started = performance.now();
    for (const end of enders) end();
    await service.drain();
    const burstWriteMs = performance.now() - started;

    // The call's own CPU over its length: `turns` turns of about 6.5 s each.
    const callSecs = options.turns * 6.5;
    const callCpuMs = (options.callCpuPctOfCore / 100) * callSecs * 1000;
    const pct = (ms: number) => Math.round((ms / callCpuMs) * 10_000) / 100;
    return {
      recordCpuMsPerCall: {
        transcript: Math.round(transcriptMs * 100) / 100,
        noTranscript: Math.round(noTranscriptMs * 100) / 100,
      },
      shareOfCallPct: { transcript: pct(transcriptMs), noTranscript: pct(noTranscriptMs) },
      burstWriteMs: Math.round(burstWriteMs),
      writesPerSec: Math.round((options.calls / burstWriteMs) * 1000),
      calls: options.calls,
    };
  } finally {
    await database.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

export function describeCallRecords(f: CallRecordsFigures, callCpuPctOfCore: number, engine: string): string {
  return [
    `call records (${engine} store): CPU per call spent on its record: ${f.recordCpuMsPerCall.transcript} ms with the transcript, ${f.recordCpuMsPerCall.noTranscript} ms without`,
    `  = ${f.shareOfCallPct.transcript} % / ${f.shareOfCallPct.noTranscript} % of the call's own CPU (${callCpuPctOfCore} % of a core over the call; goal: under 2 %)`,
    `  ${f.calls} calls ending at once: every record written in ${f.burstWriteMs} ms (${f.writesPerSec} records/s; 300 calls ending within a minute need 5/s)`,
  ].join('\n');
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { values } = parseArgs({
    options: {
      calls: { type: 'string', default: '300' },
      turns: { type: 'string', default: '12' },
      'call-cpu-pct': { type: 'string', default: '0.52' },
    },
  });
  const callCpuPctOfCore = Number(values['call-cpu-pct']);
  const figures = await measureCallRecords({
    calls: Number(values.calls),
    turns: Number(values.turns),
    callCpuPctOfCore,
    databaseUrl: process.env.DATABASE_URL,
  });
  console.log(describeCallRecords(figures, callCpuPctOfCore, process.env.DATABASE_URL ? 'PostgreSQL' : 'SQLite'));
}
