import { setFlagsFromString } from 'node:v8';

/** V8's own default for `--semi-space-growth-factor`: each growth doubles the young generation. */
const V8_DEFAULT_GROWTH_FACTOR = 2;

let held = false;

/** The operator chose the young generation's growth on node's command line or in NODE_OPTIONS. */
function growthChosenByOperator(execArgv: readonly string[], nodeOptions: string): boolean {
  const flag = /semi[-_]space[-_]growth[-_]factor/;
  return execArgv.some((arg) => flag.test(arg)) || flag.test(nodeOptions);
}

/**
 * Keeps V8's young generation at the size it has now (2 MB semi-spaces after Node's own start)
 * until calls may come (`releaseYoungGeneration`). `switchboard serve` calls it before loading
 * the server's modules.
 *
 * Why: loading the modules and building the app keep so much alive that V8 doubles the young
 * generation up to its 16 MB semi-spaces, and those 32 MB stay resident in an idle server until
 * V8's memory reducer gives them back 10 to 20 s later. Capping them for good
 * (`--max-semi-space-size`) costs CPU on every call (more scavenges); holding them only while
 * nothing but start-up and monitoring runs does not: once released, the first calls grow the young
 * generation back to its usual size within a few scavenges, as after the memory reducer. V8 reads
 * the growth factor at each growth, so the change takes effect in the running process.
 */
export function holdYoungGeneration(
  execArgv: readonly string[] = process.execArgv,
  nodeOptions = process.env.NODE_OPTIONS ?? '',
): void {
  if (held || growthChosenByOperator(execArgv, nodeOptions)) return;
  setFlagsFromString('--semi-space-growth-factor=1');
  held = true;
}

/** Lets the young generation grow as V8 would by default; nothing if it was not held. */
export function releaseYoungGeneration(): void {
  if (!held) return;
  held = false;
  setFlagsFromString(`--semi-space-growth-factor=${V8_DEFAULT_GROWTH_FACTOR}`);
}
