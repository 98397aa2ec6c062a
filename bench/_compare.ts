import { readFileSync, readdirSync } from 'node:fs';
import { decodeMulaw } from '../src/audio/mulaw.js';
import { resample } from '../src/audio/resample.js';
import { getSileroSession } from '../src/vad/silero-model.js';
import { sessionRunner } from '../src/vad/silero-batcher.js';
import { networkRunner } from '../src/vad/silero-network.js';

const rate = Number(process.argv[2] ?? 8000) as 8000 | 16000;
const session = await getSileroSession();
const ort = sessionRunner(session, rate);
const ts = networkRunner(rate);
const ctx = rate === 8000 ? 32 : 64, win = rate === 8000 ? 256 : 512;
let maxP = 0, maxS = 0, n = 0, flips = 0;
const dirs = ['fixtures/audio', 'bench/held-apart-speech'];
for (const dir of dirs) for (const f of readdirSync(dir).filter((x) => x.endsWith('.ulaw'))) {
  let pcm = decodeMulaw(readFileSync(`${dir}/${f}`));
  if (rate === 16000) pcm = resample(pcm, 8000, 16000);
  const sO = new Float32Array(256), sT = new Float32Array(256);
  const row = new Float32Array(ctx + win);
  for (let at = 0; at + win <= pcm.length; at += win) {
    for (let i = 0; i < win; i++) row[ctx + i] = pcm[at + i]! / 32768;
    const a = await ort.run(row, sO, 1, ctx + win); const pa = a.output[0]!; sO.set(a.stateN);
    const b = await ts.run(row, sT, 1, ctx + win); const pb = b.output[0]!; sT.set(b.stateN);
    maxP = Math.max(maxP, Math.abs(pa - pb));
    for (let i = 0; i < 256; i++) maxS = Math.max(maxS, Math.abs(sO[i]! - sT[i]!));
    if ((pa > 0.5) !== (pb > 0.5)) flips++;
    n++;
    row.copyWithin(0, win, ctx + win);
    // keep TS on its own state, but compare trajectories independently
  }
}
console.log({ rate, windows: n, maxProbDiff: maxP, maxStateDiff: maxS, flipsAt05: flips });
// timing
const row = new Float32Array(ctx + win).map(() => Math.random() * 0.2 - 0.1);
for (const batch of [1, 8, 32]) {
  const input = new Float32Array(batch * (ctx + win)).map(() => Math.random() * 0.2 - 0.1);
  const st = new Float32Array(2 * batch * 128);
  for (const [name, r] of [['ort', ort], ['ts', ts]] as const) {
    for (let i = 0; i < 50; i++) await r.run(input, st, batch, ctx + win);
    const t0 = process.cpuUsage(); const w0 = performance.now(); let runs = 0;
    while (performance.now() - w0 < 1500) { await r.run(input, st, batch, ctx + win); runs++; }
    const c = process.cpuUsage(t0);
    console.log(name, 'batch', batch, 'cpu µs/window', ((c.user + c.system) / (runs * batch)).toFixed(1), 'wall µs/window', ((performance.now() - w0) * 1000 / (runs * batch)).toFixed(1));
  }
}
void row;
