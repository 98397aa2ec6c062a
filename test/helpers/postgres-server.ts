/**
 * A throwaway PostgreSQL cluster for tests: initdb into a temporary directory, the server on a
 * free port (unix socket inside the data dir), stopped and deleted afterwards. PostgreSQL refuses
 * to run as root, so under root it runs as the `postgres` OS user.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { freePort } from './free-port.js';

export interface PostgresBinaries {
  /** Directory holding initdb and postgres. */
  bin: string;
  /** The OS user to run as when we are root. */
  runAs?: { uid: number; gid: number };
}

export type PostgresLookup = { ok: true; binaries: PostgresBinaries } | { ok: false; reason: string };

function binDirs(): string[] {
  const dirs: string[] = [];
  if (process.env.SWITCHBOARD_TEST_POSTGRES_BIN) dirs.push(process.env.SWITCHBOARD_TEST_POSTGRES_BIN);
  // Debian and Ubuntu keep each major version apart; prefer the newest.
  const debian = '/usr/lib/postgresql';
  if (existsSync(debian)) {
    const versions = readdirSync(debian).sort((a, b) => Number(b) - Number(a));
    dirs.push(...versions.map((v) => join(debian, v, 'bin')));
  }
  dirs.push(...(process.env.PATH ?? '').split(delimiter).filter(Boolean));
  return dirs;
}

/** Finds initdb and postgres, and whom to run them as; says why not when it cannot. */
export function findPostgres(): PostgresLookup {
  const bin = binDirs().find((dir) => existsSync(join(dir, 'initdb')) && existsSync(join(dir, 'postgres')));
  if (!bin)
    return {
      ok: false,
      reason:
        'no PostgreSQL server binaries (initdb, postgres) found; install postgresql or set SWITCHBOARD_TEST_POSTGRES_BIN',
    };
  if (process.getuid?.() !== 0) return { ok: true, binaries: { bin } };
  try {
    const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
    const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim());
    return { ok: true, binaries: { bin, runAs: { uid, gid } } };
  } catch {
    return { ok: false, reason: 'running as root, and there is no `postgres` OS user to run PostgreSQL as' };
  }
}

function spawnAs(binaries: PostgresBinaries, program: string, args: string[], cwd: string): ChildProcess {
  return spawn(join(binaries.bin, program), args, {
    cwd,
    env: { PATH: process.env.PATH ?? '', LANG: 'C', LC_ALL: 'C' },
    stdio: ['ignore', 'pipe', 'pipe'],
    ...(binaries.runAs ?? {}),
  });
}

function collect(child: ChildProcess): () => string {
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  return () => output;
}

export interface PostgresServer {
  /** Superuser URL of the `postgres` database, by host name. */
  adminUrl: string;
  port: number;
  stop(): Promise<void>;
}

export async function startPostgres(binaries: PostgresBinaries): Promise<PostgresServer> {
  const dataDir = mkdtempSync(join(tmpdir(), 'switchboard-pg-'));
  if (binaries.runAs) chownSync(dataDir, binaries.runAs.uid, binaries.runAs.gid);
  try {
    const initdb = spawnAs(
      binaries,
      'initdb',
      ['-D', dataDir, '-U', 'postgres', '--auth=trust', '--no-sync', '--encoding=UTF8', '--locale=C'],
      dataDir,
    );
    const initOutput = collect(initdb);
    const [code] = (await once(initdb, 'exit')) as [number | null];
    if (code !== 0) throw new Error(`initdb failed (${code}):\n${initOutput()}`);

    const port = await freePort();
    const server = spawnAs(
      binaries,
      'postgres',
      ['-D', dataDir, '-p', String(port), '-k', dataDir, '-c', 'listen_addresses=localhost'],
      dataDir,
    );
    const output = collect(server);
    await new Promise<void>((resolve, reject) => {
      const onData = () => {
        if (!output().includes('database system is ready to accept connections')) return;
        server.stderr!.off('data', onData);
        server.off('exit', onExit);
        resolve();
      };
      const onExit = (exitCode: number | null) => reject(new Error(`postgres exited with ${exitCode}:\n${output()}`));
      server.stderr!.on('data', onData);
      server.once('exit', onExit);
    });
    let stopping: Promise<void> | undefined;
    return {
      adminUrl: `postgres://postgres@localhost:${port}/postgres`,
      port,
      stop: () =>
        (stopping ??= (async () => {
          if (server.exitCode === null && server.signalCode === null) {
            const exited = once(server, 'exit');
            server.kill('SIGINT'); // fast shutdown: disconnects clients, no waiting for them
            await exited;
          }
          rmSync(dataDir, { recursive: true, force: true });
        })()),
    };
  } catch (err) {
    rmSync(dataDir, { recursive: true, force: true });
    throw err;
  }
}
