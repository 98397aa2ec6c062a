/**
 * A throwaway Redis for tests: Debian's `redis-server` on a free port, with no persistence and a
 * temporary working directory, stopped and deleted afterwards.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { type AddressInfo, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';

// Kept free of the app's imports: vitest.config.ts loads this file.
async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as AddressInfo;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}

export type RedisLookup = { ok: true; binary: string } | { ok: false; reason: string };

/** Finds redis-server (SWITCHBOARD_TEST_REDIS_SERVER, else PATH, else /usr/bin); says why not when it cannot. */
export function findRedis(): RedisLookup {
  const candidates = [
    process.env.SWITCHBOARD_TEST_REDIS_SERVER,
    ...(process.env.PATH ?? '')
      .split(delimiter)
      .filter(Boolean)
      .map((dir) => join(dir, 'redis-server')),
    '/usr/bin/redis-server',
  ].filter((path): path is string => path !== undefined);
  const binary = candidates.find((path) => existsSync(path));
  return binary
    ? { ok: true, binary }
    : { ok: false, reason: 'no redis-server found; install redis-server or set SWITCHBOARD_TEST_REDIS_SERVER' };
}

export interface RedisServer {
  /** redis://localhost:port (a host name, as an operator writes it). */
  url: string;
  stop(): Promise<void>;
}

export async function startRedis(binary: string): Promise<RedisServer> {
  const dir = mkdtempSync(join(tmpdir(), 'switchboard-redis-'));
  const port = await freePort();
  const server: ChildProcess = spawn(
    binary,
    [
      '--port',
      String(port),
      '--bind',
      '127.0.0.1 ::1',
      '--dir',
      dir,
      '--save',
      '',
      '--appendonly',
      'no',
      '--protected-mode',
      'no',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'], cwd: dir },
  );
  let output = '';
  try {
    await new Promise<void>((resolve, reject) => {
      const onData = (chunk: Buffer) => {
        output += chunk.toString();
        if (output.includes('Ready to accept connections')) {
          server.off('exit', onExit);
          resolve();
        }
      };
      const onExit = (code: number | null) => reject(new Error(`redis-server exited with ${code}:\n${output}`));
      server.stdout!.on('data', onData);
      server.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
      server.once('exit', onExit);
    });
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
  let stopping: Promise<void> | undefined;
  return {
    url: `redis://localhost:${port}`,
    stop: () =>
      (stopping ??= (async () => {
        if (server.exitCode === null && server.signalCode === null) {
          const exited = once(server, 'exit');
          server.kill('SIGKILL');
          await exited;
        }
        rmSync(dir, { recursive: true, force: true });
      })()),
  };
}
