import { PerformanceObserver } from 'node:perf_hooks';
import { getHeapSpaceStatistics, setFlagsFromString } from 'node:v8';

/** V8's own default for `--semi-space-growth-factor`: each growth doubles the young generation. */
const V8_DEFAULT_GROWTH_FACTOR = 2;

/**
 * How large the young generation may grow once calls come: 8 MB (two 4 MB semi-spaces), where V8
 * would go to 32 MB. Calls keep little alive from one collection to the next (Playout holds a
 * reply's audio in one buffer, playout.ts), so a smaller young generation costs a few more
 * scavenges of almost nothing; measured side by side it cost no CPU per speech-to-speech call and
 * about 2 % on the pipeline, for 13 to 19 MB less resident memory once calls have come
 * (docs/cost-per-call.md).
 */
export const CALLS_YOUNG_GENERATION_BYTES = 8 * 2 ** 20;

let held = false;
let capped: PerformanceObserver | undefined;

/** The operator chose the young generation's size or growth on node's command line or in NODE_OPTIONS. */
function youngGenerationChosenByOperator(execArgv: readonly string[], nodeOptions: string): boolean {
  const flag = /semi[-_]space[-_](growth[-_]factor|size)/;
  return execArgv.some((arg) => flag.test(arg)) || flag.test(nodeOptions);
}

function youngGenerationBytes(): number {
  return getHeapSpaceStatistics().find((space) => space.space_name === 'new_space')?.space_size ?? 0;
}

/**
 * Keeps V8's young generation at the size it has now (2 MB semi-spaces after Node's own start)
 * until calls may come (`releaseYoungGeneration`). `switchboard serve` calls it before loading
 * the server's modules.
 *
 * Why: loading the modules and building the app keep so much alive that V8 doubles the young
 * generation up to its 16 MB semi-spaces, and those 32 MB stay resident in an idle server until
 * V8's memory reducer gives them back 10 to 20 s later. Holding them at their starting size for
 * good costs CPU on every call (more scavenges); holding them only while nothing but start-up and
 * monitoring runs does not: once released, the first calls grow the young generation to the size
 * calls get (CALLS_YOUNG_GENERATION_BYTES) within a few scavenges. V8 reads the growth factor at
 * each growth, so the change takes effect in the running process.
 */
export function holdYoungGeneration(
  execArgv: readonly string[] = process.execArgv,
  nodeOptions = process.env.NODE_OPTIONS ?? '',
): void {
  if (held || youngGenerationChosenByOperator(execArgv, nodeOptions)) return;
  setFlagsFromString('--semi-space-growth-factor=1');
  held = true;
}

/**
 * Lets the young generation grow as V8 would, up to `capBytes`; nothing if it was not held.
 *
 * V8 reads its maximum (`--max-semi-space-size`) only when the process starts, so the cap is kept
 * the way the hold is: after each collection, the growth factor is V8's own while the young
 * generation is under the cap and 1 once it has reached it (it grows at most once per
 * collection, doubling, so from Node's 2 MB it stops at 8 MB exactly). V8 may still shrink it
 * (a full collection in a quiet spell); it then grows back to the cap. A burst that keeps much
 * alive right after such a shrink can take it one doubling past the cap before the next check
 * (seen only in a synthetic test keeping megabytes per turn), still half of V8's 32 MB.
 */
export function releaseYoungGeneration(capBytes = CALLS_YOUNG_GENERATION_BYTES): void {
  if (!held) return;
  held = false;
  let factor = 0;
  const steer = () => {
    const next = youngGenerationBytes() >= capBytes ? 1 : V8_DEFAULT_GROWTH_FACTOR;
    if (next === factor) return;
    factor = next;
    setFlagsFromString(`--semi-space-growth-factor=${factor}`);
  };
  steer();
  capped = new PerformanceObserver(steer);
  capped.observe({ entryTypes: ['gc'] });
}

/** Stops keeping the cap (tests): the growth factor stays as it was last set. */
export function stopCappingYoungGeneration(): void {
  capped?.disconnect();
  capped = undefined;
}
