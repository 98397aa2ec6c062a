import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { decodeMulaw } from '../src/audio/mulaw.js';
import { resample } from '../src/audio/resample.js';
import { type SileroBatchRunner, sessionRunner } from '../src/vad/silero-batcher.js';
import { getSileroSession, SILERO_GEOMETRY, SILERO_STATE_SIZE } from '../src/vad/silero-model.js';
import { networkRunner, SileroNetwork } from '../src/vad/silero-network.js';

/**
 * `npx tsx bench/vad-network.ts [--rate 8000|16000]`: the Silero network in TypeScript
 * (src/vad/silero-network.ts) beside onnxruntime on the same model. Prints the largest differences
 * in probability and state over every fixture and held-apart clip (each on its own state), then
 * the CPU time per window of each, alone and in batches. A script, not a test: it never fails.
 */

const { values: args } = parseArgs({ options: { rate: { type: 'string', default: '8000' } } });
const rate = Number(args.rate) as 8000 | 16000;
const DIRS = ['../fixtures/audio/', './held-apart-speech/'].map((dir) => fileURLToPath(new URL(dir, import.meta.url)));

const reference = sessionRunner(await getSileroSession(), rate);
const networkItself = new SileroNetwork(rate);
const network = networkRunner(rate, networkItself);
const { windowSamples, contextSamples } = SILERO_GEOMETRY[rate];
const rowSamples = contextSamples + windowSamples;

let probabilityDiff = 0;
let stateDiff = 0;
let windows = 0;
let flips = 0;
for (const dir of DIRS) {
  for (const file of readdirSync(dir).filter((name) => name.endsWith('.ulaw'))) {
    let pcm = decodeMulaw(readFileSync(`${dir}${file}`));
    if (rate === 16000) pcm = resample(pcm, 8000, 16000);
    const referenceState = new Float32Array(SILERO_STATE_SIZE);
    const networkState = new Float32Array(SILERO_STATE_SIZE);
    const row = new Float32Array(rowSamples);
    for (let at = 0; at + windowSamples <= pcm.length; at += windowSamples) {
      for (let i = 0; i < windowSamples; i++) row[contextSamples + i] = pcm[at + i]! / 32768;
      const expected = await reference.run(row, referenceState, 1, rowSamples);
      const expectedProbability = expected.output[0]!;
      referenceState.set(expected.stateN.subarray(0, SILERO_STATE_SIZE));
      const actual = await network.run(row, networkState, 1, rowSamples);
      networkState.set(actual.stateN.subarray(0, SILERO_STATE_SIZE));
      probabilityDiff = Math.max(probabilityDiff, Math.abs(expectedProbability - actual.output[0]!));
      for (let i = 0; i < SILERO_STATE_SIZE; i++) {
        stateDiff = Math.max(stateDiff, Math.abs(referenceState[i]! - networkState[i]!));
      }
      if (expectedProbability > 0.5 !== actual.output[0]! > 0.5) flips++;
      windows++;
      row.copyWithin(0, windowSamples, rowSamples);
    }
  }
}
console.log(
  `${rate} Hz, ${windows} windows: largest probability difference ${probabilityDiff.toExponential(2)}, ` +
    `state ${stateDiff.toExponential(2)}, windows on different sides of 0.5: ${flips}; the network's STFT by ${networkItself.stftMethod}`,
);

async function cpuPerWindowUs(runner: SileroBatchRunner, batch: number): Promise<number> {
  const input = new Float32Array(batch * rowSamples).map(() => Math.random() * 0.2 - 0.1);
  const state = new Float32Array(2 * batch * 128);
  for (let i = 0; i < 50; i++) await runner.run(input, state, batch, rowSamples);
  const before = process.cpuUsage();
  const startedAt = performance.now();
  let runs = 0;
  while (performance.now() - startedAt < 1500) {
    await runner.run(input, state, batch, rowSamples);
    runs++;
  }
  const cpu = process.cpuUsage(before);
  return (cpu.user + cpu.system) / (runs * batch);
}

console.log(
  `load average ${(await import('node:os'))
    .loadavg()
    .map((v) => v.toFixed(1))
    .join(' ')}`,
);
console.log('CPU µs per window (all threads): batch  onnxruntime  network');
for (const batch of [1, 8, 32]) {
  const onnx = await cpuPerWindowUs(reference, batch);
  const ts = await cpuPerWindowUs(network, batch);
  console.log(`${String(batch).padStart(39)}  ${onnx.toFixed(1).padStart(11)}  ${ts.toFixed(1).padStart(7)}`);
}
