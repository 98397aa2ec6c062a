import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { CallSummary } from '../src/pipeline/call-metrics.js';
import { freePort } from '../test/helpers/free-port.js';
import { pinnedCommand, pinnedProgram } from './cpu-pinning.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
export const BENCH_API_KEY = 'sb_bench_key_0123456789abcdef';

/** The server under test, in its own process (built JavaScript, as in production). */
export interface ServerProcess {
  baseUrl: string;
  child: ChildProcess;
  /** Every `call ended` log line so far. */
  readonly calls: CallSummary[];
  /** Resolves once the server has logged a line whose message is `msg` (e.g. 'voice activity model ready'). */
  logged(msg: string, timeoutMs?: number): Promise<void>;
  stop(): Promise<void>;
}

/**
 * How a checkout's server starts: as operators start it, through its launcher (`bin/switchboard`,
 * what `npm start` and the image run, which sets malloc's environment), with `nodeArgs` in
 * SWITCHBOARD_NODE_ARGS; a build from before the launcher, as node on
 * dist/cli/main.js.
 */
function serverCommand(
  root: string,
  nodeArgs: string[],
  cpus: string | undefined,
): [string, string[], Record<string, string>] {
  const launcher = join(root, 'bin/switchboard');
  if (!existsSync(launcher))
    return [...pinnedCommand(cpus, [...nodeArgs, join(root, 'dist/cli/main.js'), 'serve']), {}];
  return [
    ...pinnedProgram(cpus, launcher, ['serve']),
    nodeArgs.length > 0 ? { SWITCHBOARD_NODE_ARGS: nodeArgs.join(' ') } : {},
  ];
}

/**
 * `nodeArgs`: options for node itself, e.g. `--cpu-prof` (bench/profile.ts); `cpus`: taskset's CPU
 * list to run the server on (cpu-pinning.ts); `root`: the checkout whose build runs (bench/cost-ab.ts
 * compares two).
 */
export async function startServerProcess(
  env: Record<string, string>,
  nodeArgs: string[] = [],
  cpus?: string,
  root = ROOT,
): Promise<ServerProcess> {
  const port = await freePort();
  const dataDir = mkdtempSync(join(tmpdir(), 'switchboard-bench-'));
  const [command, args, nodeOptions] = serverCommand(root, nodeArgs, cpus);
  const child = spawn(command, args, {
    cwd: root,
    env: {
      PATH: process.env.PATH ?? '',
      ...nodeOptions,
      PORT: String(port),
      HOST: '127.0.0.1',
      SWITCHBOARD_PUBLIC_URL: `http://127.0.0.1:${port}`,
      SWITCHBOARD_DATA_DIR: dataDir,
      SWITCHBOARD_API_KEY: BENCH_API_KEY,
      LOG_LEVEL: 'info',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const calls: CallSummary[] = [];
  const messages = new Set<string>();
  const messageWaiters: Array<{ msg: string; resolve: () => void }> = [];
  let pending = '';
  let output = '';
  const listening = new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the server did not start:\n${output.slice(-2000)}`)), 30_000);
    child.stdout!.on('data', (chunk: Buffer) => {
      pending += chunk.toString();
      let newline = pending.indexOf('\n');
      while (newline >= 0) {
        const line = pending.slice(0, newline);
        pending = pending.slice(newline + 1);
        newline = pending.indexOf('\n');
        if (output.length < 100_000) output += `${line}\n`;
        if (line.includes('"switchboard listening"')) {
          clearTimeout(timer);
          resolve();
        }
        const msg = /"msg":"([^"]*)"/.exec(line)?.[1];
        if (msg !== undefined && !messages.has(msg)) {
          messages.add(msg);
          for (const waiter of messageWaiters.filter((w) => w.msg === msg)) waiter.resolve();
        }
        if (line.includes('"call ended"')) {
          try {
            calls.push(JSON.parse(line) as CallSummary);
          } catch {
            // A partial line cannot happen (split on newlines); anything else is not ours to judge.
          }
        }
      }
    });
    child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`the server exited with ${code}:\n${output.slice(-2000)}`));
    });
  });
  await listening;
  return {
    baseUrl: `http://127.0.0.1:${port}`,
    child,
    calls,
    logged(msg, timeoutMs = 30_000) {
      if (messages.has(msg)) return Promise.resolve();
      return new Promise<void>((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`the server did not log "${msg}" within ${timeoutMs} ms`)),
          timeoutMs,
        );
        messageWaiters.push({
          msg,
          resolve: () => {
            clearTimeout(timer);
            resolve();
          },
        });
      });
    },
    async stop() {
      if (child.exitCode === null) {
        child.kill('SIGTERM');
        await once(child, 'exit');
      }
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** Creates a telephony configuration on the server and returns its id. */
export async function createBotConfig(baseUrl: string, body: Record<string, unknown>): Promise<string> {
  const res = await fetch(`${baseUrl}/v1/bots/twilio-config`, {
    method: 'POST',
    headers: { authorization: `Bearer ${BENCH_API_KEY}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  if (res.status !== 200) throw new Error(`configuration refused: ${res.status} ${await res.text()}`);
  return ((await res.json()) as { id: string }).id;
}

/** The server's /metrics, as name{labels} → value. */
export async function scrapeMetrics(baseUrl: string): Promise<Map<string, number>> {
  const text = await (await fetch(`${baseUrl}/metrics`)).text();
  const values = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line.startsWith('#') || line.trim() === '') continue;
    const space = line.lastIndexOf(' ');
    values.set(line.slice(0, space), Number(line.slice(space + 1)));
  }
  return values;
}
