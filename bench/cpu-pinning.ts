import { execFileSync } from 'node:child_process';
import { availableParallelism } from 'node:os';

/**
 * Keeps the server apart from its load: on a machine with two or more cores and `taskset`
 * (util-linux), the server runs on core 0 and the load (call generators, vendor emulators) on the
 * others, so the server's CPU and event-loop figures are those of one core of its own. Without
 * `taskset`, or with SWITCHBOARD_BENCH_PIN=0, nothing is pinned and the figures say so.
 */
export interface CpuPinning {
  /** taskset's CPU list for the server, e.g. "0"; undefined when not pinned. */
  server: string | undefined;
  /** CPU list for the generators and emulators. */
  load: string | undefined;
  describe: string;
}

function hasTaskset(): boolean {
  try {
    execFileSync('taskset', ['-p', String(process.pid)], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

export function cpuPinning(): CpuPinning {
  const cores = availableParallelism();
  if (process.env.SWITCHBOARD_BENCH_PIN === '0' || cores < 2 || !hasTaskset()) {
    return { server: undefined, load: undefined, describe: `not pinned: server and load share ${cores} core(s)` };
  }
  const load = cores === 2 ? '1' : `1-${cores - 1}`;
  return { server: '0', load, describe: `server pinned to core 0, generators and emulators to core(s) ${load}` };
}

/** The command and arguments that run `args` (node and its arguments) on `cpus`. */
export function pinnedCommand(cpus: string | undefined, args: string[]): [string, string[]] {
  return pinnedProgram(cpus, process.execPath, args);
}

/** The command and arguments that run `program` with `args` on `cpus`. */
export function pinnedProgram(cpus: string | undefined, program: string, args: string[]): [string, string[]] {
  return cpus === undefined ? [program, args] : ['taskset', ['-c', cpus, program, ...args]];
}
