import { mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { measureCapacity, startEmulateProcess } from './capacity.js';
import { cpuPinning } from './cpu-pinning.js';
import { benchEmulatorArgs } from './latency.js';
import { startServerProcess } from './server-process.js';
import { configureTalkingBot, settledRssBytes, talkingBotVendors } from './talking-bot.js';

/**
 * Where a talking call's CPU goes: the built server in its own process under `--cpu-prof`
 * (main thread and the Silero worker each write a profile), N simultaneous talking calls from the
 * capacity generator against the emulators, then the profiles' self time grouped by stage.
 *
 *   npx tsc -p . && npx tsx bench/profile.ts --calls 50 --duration-s 40 --dir .tmp/profile
 *
 * Prints the idle RSS, the CPU per call as /metrics saw it over the steady window, and a table
 * per thread of the share of CPU by stage. `--analyse <dir>` only re-reads profiles already there.
 * `--s2s` profiles the speech-to-speech path (OpenAI Realtime) instead of the pipeline.
 */

const { values: args } = parseArgs({
  options: {
    calls: { type: 'string', default: '50' },
    'duration-s': { type: 'string', default: '40' },
    dir: { type: 'string', default: '.tmp/profile' },
    analyse: { type: 'string' },
    s2s: { type: 'boolean', default: false },
  },
});
const FIXTURES = fileURLToPath(new URL('../fixtures/audio', import.meta.url));

async function main(): Promise<void> {
  if (args.analyse) {
    analyse(resolve(args.analyse));
    return;
  }
  const dir = resolve(args.dir);
  mkdirSync(dir, { recursive: true });
  const pinning = cpuPinning();
  process.stdout.write(`${pinning.describe}\n`);
  const emulators = await startEmulateProcess(benchEmulatorArgs(), pinning.load);
  const server = await startServerProcess(
    talkingBotVendors(emulators.url),
    ['--cpu-prof', `--cpu-prof-dir=${dir}`],
    pinning.server,
  );
  try {
    const wssUrl = await configureTalkingBot(server, args.s2s);
    // Idle: listening, the VAD's network loaded (the configuration readies it), no call yet.
    const idleRssBytes = await settledRssBytes(server.baseUrl, 3000);
    const calls = Number(args.calls);
    const durationMs = Number(args['duration-s']) * 1000;
    const point = await measureCapacity({
      baseUrl: server.baseUrl,
      wssUrl,
      calls,
      durationMs,
      warmUpMs: 8000,
      fixturesDir: FIXTURES,
      idleRssBytes,
      loadCpus: pinning.load,
    });
    process.stdout.write(`idle RSS ${(idleRssBytes / 2 ** 20).toFixed(1)} MB\n${JSON.stringify(point)}\n`);
  } finally {
    await server.stop();
    await emulators.stop();
  }
  analyse(dir);
}

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string };
  children?: number[];
}
interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
}

/** Stage of a frame by its script, most specific first. */
const STAGES_BY_URL: Array<[RegExp, string]> = [
  [/\/vad\/|onnxruntime|^wasm:/, 'VAD (Silero: windows, batching, inference)'],
  [/audio\/resample|format-converter/, 'resampling / format conversion'],
  [/audio\/mulaw|alawmulaw/, 'mu-law'],
  [/pipeline\/playout|playout-clock/, 'playout tick'],
  [/pino|sonic-boom|observability\/logger|thread-stream/, 'logging'],
  [/telephony\//, 'Twilio media stream (parse, base64, send)'],
  [/providers\/stt\//, 'STT adapter'],
  [/providers\/tts\//, 'TTS adapter'],
  [/providers\/llm\//, 'LLM adapter'],
  [/providers\/s2s\//, 'speech-to-speech adapter'],
  [/\/ws\/lib\//, 'websocket framing (ws)'],
  [/zod/, 'schema validation (zod)'],
  [/prom-client|observability\//, 'metrics'],
  [/pipeline\//, 'pipeline (session, turns)'],
  [/fastify|avvio|find-my-way|light-my-request/, 'HTTP (fastify)'],
  [/^node:/, 'Node core (net, streams, timers)'],
];
/** Built-ins with no script of their own; the rest inherit their caller's stage. */
const BUILTINS: Record<string, string> = {
  '(garbage collector)': 'GC',
  '(idle)': 'idle',
  '(program)': 'native / unattributed',
  parse: 'JSON parse/stringify',
  stringify: 'JSON parse/stringify',
  base64Slice: 'base64',
  base64Write: 'base64',
  base64DecodeSlowPath: 'base64',
  writev: 'socket writes',
  writeBuffer: 'socket writes',
  writeUtf8String: 'socket writes',
};

function analyse(dir: string): void {
  for (const file of readdirSync(dir)
    .filter((f) => f.endsWith('.cpuprofile'))
    .sort()) {
    const profile = JSON.parse(readFileSync(join(dir, file), 'utf8')) as CpuProfile;
    const byId = new Map(profile.nodes.map((n) => [n.id, n]));
    const parent = new Map<number, number>();
    for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
    const stageOf = new Map<number, string>();
    const stage = (id: number): string => {
      const known = stageOf.get(id);
      if (known) return known;
      const { functionName, url } = byId.get(id)!.callFrame;
      let found = BUILTINS[functionName] && url === '' ? BUILTINS[functionName] : undefined;
      if (!found && url) found = STAGES_BY_URL.find(([re]) => re.test(url))?.[1] ?? 'other JavaScript';
      if (!found) found = parent.has(id) ? stage(parent.get(id)!) : 'native / unattributed';
      stageOf.set(id, found);
      return found;
    };
    const selfUs = new Map<number, number>();
    for (let i = 0; i < profile.samples.length; i++)
      selfUs.set(profile.samples[i]!, (selfUs.get(profile.samples[i]!) ?? 0) + (profile.timeDeltas[i] ?? 0));
    const byStage = new Map<string, number>();
    const byFunction = new Map<string, number>();
    let busyUs = 0;
    for (const [id, us] of selfUs) {
      const name = stage(id);
      byStage.set(name, (byStage.get(name) ?? 0) + us);
      if (name === 'idle') continue;
      busyUs += us;
      const { functionName, url } = byId.get(id)!.callFrame;
      const key = `${functionName || '(anonymous)'} ${url.replace(/^.*node_modules\//, '').replace(/^file:\/\/.*\/(dist|src)\//, '')}`;
      byFunction.set(key, (byFunction.get(key) ?? 0) + us);
    }
    const wallUs = profile.endTime - profile.startTime;
    const lines = [
      `\n${file}: ${(wallUs / 1e6).toFixed(1)} s profiled, busy ${((busyUs / wallUs) * 100).toFixed(1)} % of a core`,
    ];
    for (const [name, us] of [...byStage].filter(([n]) => n !== 'idle').sort((a, b) => b[1] - a[1])) {
      lines.push(`  ${((us / busyUs) * 100).toFixed(1).padStart(5)} %  ${name}`);
    }
    lines.push('  top functions (self time):');
    for (const [name, us] of [...byFunction].sort((a, b) => b[1] - a[1]).slice(0, 20))
      lines.push(`  ${((us / busyUs) * 100).toFixed(1).padStart(5)} %  ${name}`);
    const text = lines.join('\n');
    process.stdout.write(`${text}\n`);
    writeFileSync(join(dir, `${file}.txt`), `${text}\n`);
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`profile failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exitCode = 1;
});
