import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import pino from 'pino';
import { CallRecorder } from '../src/recordings/call-tracks-recorder.js';

/**
 * `npx tsx bench/recording-overhead.ts [--calls 300] [--seconds 10]`: what recording costs a call.
 * N recorders take a caller frame and a bot frame every 20 ms each (both sides talking all the
 * time, the worst case) while their timers flush to real files in a temp dir. A script, not a
 * test: it prints the cost per frame call on the 20 ms path, the flush cost, and the event-loop
 * delay, and never fails.
 */

const { values } = parseArgs({
  options: { calls: { type: 'string', default: '300' }, seconds: { type: 'string', default: '10' } },
});
const calls = Number(values.calls);
const seconds = Number(values.seconds);
const dir = mkdtempSync(join(tmpdir(), 'switchboard-bench-rec-'));
const log = pino({ level: 'silent' });

const frame = new Uint8Array(160);
for (let i = 0; i < 160; i++) frame[i] = (i * 7) & 0xff;

const recorders = Array.from(
  { length: calls },
  (_, i) =>
    new CallRecorder({
      paths: {
        caller: join(dir, `${i}-caller.wav`),
        bot: join(dir, `${i}-bot.wav`),
        mixed: join(dir, `${i}-mixed.wav`),
      },
      log,
      onFinished: async () => undefined,
    }),
);

const loop = monitorEventLoopDelay({ resolution: 5 });
loop.enable();
let frameCalls = 0;
let frameNs = 0n;
const started = performance.now();
const timer = setInterval(() => {
  const t0 = process.hrtime.bigint();
  for (const recorder of recorders) {
    recorder.callerFrame(frame);
    recorder.botFrame(frame);
  }
  frameNs += process.hrtime.bigint() - t0;
  frameCalls += calls * 2;
}, 20);

await new Promise((resolve) => setTimeout(resolve, seconds * 1000));
clearInterval(timer);
loop.disable();
const cpu = process.cpuUsage();
const finishStarted = performance.now();
await Promise.all(recorders.map((r) => r.finish()));
const finishMs = performance.now() - finishStarted;
const wallMs = performance.now() - started;

const ms = (ns: number) => (ns / 1e6).toFixed(2);
console.log(`recorders: ${calls}, ${seconds} s of audio each (caller + bot every 20 ms)`);
console.log(`frame call (callerFrame or botFrame): ${(Number(frameNs) / frameCalls).toFixed(0)} ns mean`);
console.log(
  `event-loop delay: p50 ${ms(loop.percentile(50))} ms, p99 ${ms(loop.percentile(99))} ms, max ${ms(loop.max)} ms`,
);
console.log(
  `process CPU: ${(((cpu.user + cpu.system) / 1000 / wallMs) * 1000).toFixed(0)} ms per s (1000 = one core), ${(((cpu.user + cpu.system) / 1000 / wallMs / calls) * 1000).toFixed(2)} per call`,
);
console.log(`finish (last flush, header fix-up, fsync) of all ${calls}: ${finishMs.toFixed(0)} ms`);
rmSync(dir, { recursive: true, force: true });
