import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import * as ort from 'onnxruntime-node';
import { decodeMulaw } from '../src/audio/mulaw.js';
import {
  getSileroSession,
  releaseSileroSession,
  SILERO_GEOMETRY,
  SILERO_INPUT,
  SILERO_OUTPUT,
  SILERO_SAMPLE_RATE,
  SILERO_STATE,
  SILERO_STATE_OUT,
  sampleRateTensor,
} from '../src/vad/silero-model.js';

/**
 * `npx tsx bench/vad-throughput.ts`: what one Silero window costs at 8 kHz when B calls' windows
 * run as one inference, for the batch sizes a busy server sees. A script, not a test: it prints.
 *
 * Each batch size runs on real speech (the JFK clip, each row at a different offset, so rows
 * differ) with the recurrent state carried between runs, as in a call. The ms per window figure
 * is wall time of session.run divided by B; 300 calls need 300 x 31.25 = 9,375 windows/s.
 */

const { values: args } = parseArgs({
  options: {
    batches: { type: 'string', default: '1,8,32,64,128,300' },
    'duration-ms': { type: 'string', default: '1500' },
  },
});

/** One row of the recurrent state [2, batch, 128]. */
const SILERO_STATE_WIDTH = 128;
const CALL_WINDOWS_PER_SEC = 8000 / 256;
const { windowSamples, contextSamples } = SILERO_GEOMETRY[8000];
const ROW = windowSamples + contextSamples;
const clip = decodeMulaw(readFileSync(fileURLToPath(new URL('../fixtures/audio/A01_jfk.ulaw', import.meta.url))));

async function measure(session: ort.InferenceSession, batch: number, durationMs: number) {
  const input = new Float32Array(batch * ROW);
  let state: Float32Array = new Float32Array(2 * batch * SILERO_STATE_WIDTH);
  const sr = sampleRateTensor(ort, 8000);
  let offset = 0;
  const fill = () => {
    for (let row = 0; row < batch; row++) {
      const start = (offset + row * 997) % (clip.length - ROW);
      for (let i = 0; i < ROW; i++) input[row * ROW + i] = clip[start + i]! / 32768;
    }
    offset += windowSamples;
  };
  const run = async () => {
    const out = await session.run({
      [SILERO_INPUT]: new ort.Tensor('float32', input, [batch, ROW]),
      [SILERO_STATE]: new ort.Tensor('float32', state, [2, batch, SILERO_STATE_WIDTH]),
      [SILERO_SAMPLE_RATE]: sr,
    });
    state = out[SILERO_STATE_OUT]!.data as Float32Array;
    return out[SILERO_OUTPUT]!.data as Float32Array;
  };
  for (let i = 0; i < 20; i++) {
    fill();
    await run(); // warm-up
  }
  let runs = 0;
  let runMs = 0;
  const started = performance.now();
  while (performance.now() - started < durationMs) {
    fill();
    const t0 = performance.now();
    await run();
    runMs += performance.now() - t0;
    runs++;
  }
  const windows = runs * batch;
  const msPerWindow = runMs / windows;
  return {
    batch,
    runs,
    msPerRun: runMs / runs,
    msPerWindow,
    windowsPerSec: 1000 / msPerWindow,
    callsPerCore: 1000 / msPerWindow / CALL_WINDOWS_PER_SEC,
  };
}

async function main(): Promise<void> {
  const session = await getSileroSession();
  console.log(`silero v6 inputs ${session.inputNames.join(',')} -> outputs ${session.outputNames.join(',')}`);
  console.log('batch  runs  ms/run   ms/window  windows/s  calls/core (31.25 windows/s each)');
  for (const batch of args.batches.split(',').map(Number)) {
    const r = await measure(session, batch, Number(args['duration-ms']));
    console.log(
      `${String(r.batch).padStart(5)} ${String(r.runs).padStart(5)} ${r.msPerRun.toFixed(3).padStart(7)} ` +
        `${r.msPerWindow.toFixed(4).padStart(10)} ${Math.round(r.windowsPerSec).toString().padStart(10)} ` +
        `${Math.round(r.callsPerCore).toString().padStart(10)}`,
    );
  }
  await releaseSileroSession();
}

await main();
