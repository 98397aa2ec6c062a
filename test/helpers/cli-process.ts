import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { BUILT_CLI, requireBuilt } from './built-cli.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

let checkedBuild = false;

/** Runs the built CLI (dist/, compiled once per run by built-cli.ts), as an operator runs it. */
export function spawnCli(args: string[], env: Record<string, string>): ChildProcess {
  if (!checkedBuild) {
    requireBuilt();
    checkedBuild = true;
  }
  return spawn(process.execPath, [BUILT_CLI, ...args], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

/**
 * Runs the CLI to its exit. With `killAfterMs`, a run that is still going then (a command that
 * should have exited but serves instead) is killed and reported with code -1.
 */
export async function runCli(
  args: string[],
  env: Record<string, string>,
  options: { killAfterMs?: number } = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  const child = spawnCli(args, env);
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const timer =
    options.killAfterMs === undefined ? undefined : setTimeout(() => child.kill('SIGKILL'), options.killAfterMs);
  const [code] = (await once(child, 'exit')) as [number | null];
  clearTimeout(timer);
  return { code: code ?? -1, stdout, stderr };
}

const START_TIMEOUT_MS = 60_000;

/** Starts `switchboard serve` (on port 0 unless `env` or `args` say otherwise) and resolves with its address once it logs that it listens. */
export async function startServeProcess(
  env: Record<string, string>,
  args: string[] = [],
): Promise<{ child: ChildProcess; baseUrl: string; output: () => string }> {
  const child = spawnCli(['serve', ...args], { PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info', ...env });
  let output = '';
  const baseUrl = await new Promise<string>((resolve, reject) => {
    // Only against a hang: a server started at the lowest priority beside the call tests
    // (processes-without-calls, docs/testing.md) can wait long for a core.
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`server did not start within ${START_TIMEOUT_MS / 1000} s:\n${output}`));
    }, START_TIMEOUT_MS);
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      const match = /"address":"(http:\/\/[^"]+)".*"msg":"switchboard listening"/.exec(output);
      if (match?.[1]) {
        clearTimeout(timer);
        resolve(match[1]);
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`server exited with ${code}:\n${output}`));
    });
  });
  return { child, baseUrl, output: () => output };
}

/** Stops the processes a test started that are still running (`signal`, then waits for each exit), and forgets them. */
export async function stopProcesses(children: ChildProcess[], signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
  for (const child of children.splice(0)) {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill(signal);
      await once(child, 'exit');
    }
  }
}

/**
 * The first match of `pattern` in what `child` writes to stdout; rejects, with what it wrote, if it
 * exits first or after `timeoutMs` (only against a hang).
 */
export function untilOutput(child: ChildProcess, pattern: RegExp, timeoutMs = 20_000): Promise<RegExpExecArray> {
  let output = '';
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no ${pattern} within ${timeoutMs} ms:\n${output}`)), timeoutMs);
    child.stdout!.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      const match = pattern.exec(output);
      if (match) {
        clearTimeout(timer);
        resolve(match);
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`exited with ${code} before ${pattern}:\n${output}`));
    });
  });
}
