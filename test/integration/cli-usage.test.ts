import { existsSync } from 'node:fs';
import { once } from 'node:events';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { freePort } from '../helpers/free-port.js';
import { runCli, startServeProcess } from '../helpers/cli-process.js';
import { TEST_KEY, removeDir, tempDataDir } from '../helpers/test-data.js';

/**
 * The CLI as an operator meets it: every command answers --help on stdout with exit 0, misuse is
 * one clear line on stderr with exit 2 (no stack traces, nothing started, no data dir created),
 * and serve honours --port and --host.
 */

/** A command that should exit at once but serves instead is killed and shows up as code -1. */
const KILL_AFTER_MS = 30_000;

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) removeDir(dir);
});

/** Runs `jobs` a few at a time: each spawns a CLI process, and the machine is shared. */
async function inBatches<T>(jobs: Array<() => Promise<T>>, size = 3): Promise<T[]> {
  const results: T[] = [];
  for (let i = 0; i < jobs.length; i += size)
    results.push(...(await Promise.all(jobs.slice(i, i + size).map((job) => job()))));
  return results;
}

function env(): Record<string, string> {
  const root = tempDataDir();
  dirs.push(root);
  // A data dir that does not exist yet: help and misuse must not create it.
  // PORT 0 and a loopback HOST: a command that wrongly starts serving takes no fixed port.
  return { SWITCHBOARD_DATA_DIR: join(root, 'data'), SWITCHBOARD_API_KEY: TEST_KEY, PORT: '0', HOST: '127.0.0.1' };
}

describe('switchboard CLI usage', () => {
  it('answers --help for every command and subcommand on stdout with exit 0', { timeout: 180_000 }, async () => {
    const e = env();
    const cases: Array<[string[], string]> = [
      [['--help'], 'usage: switchboard <command>'],
      [['-h'], 'usage: switchboard <command>'],
      [['help'], 'usage: switchboard <command>'],
      [['serve', '--help'], 'usage: switchboard serve'],
      [['serve', '-h'], 'usage: switchboard serve'],
      [['keys', '--help'], 'usage: switchboard keys'],
      [['keys', 'create', '--help'], 'usage: switchboard keys create'],
      [['keys', 'list', '--help'], 'usage: switchboard keys list'],
      [['keys', 'revoke', '--help'], 'usage: switchboard keys revoke'],
      [['call', '--help'], 'usage: switchboard call'],
      [['emulate', '--help'], 'usage: switchboard emulate'],
      [['loadtest', '--help'], 'usage: switchboard loadtest'],
    ];
    const runs = await inBatches(
      cases.map(
        ([args]) =>
          () =>
            runCli(args, e, { killAfterMs: KILL_AFTER_MS }),
      ),
    );
    cases.forEach(([args, usage], i) => {
      const run = runs[i]!;
      const what = `switchboard ${args.join(' ')}: ${run.stderr}`;
      expect(run.code, what).toBe(0);
      expect(run.stdout.startsWith(usage), `${what}\n${run.stdout}`).toBe(true);
      expect(run.stderr, what).toBe('');
    });
    expect(runs[3]!.stdout).toContain('--port');
    expect(runs[3]!.stdout).toContain('--host');
    expect(existsSync(e.SWITCHBOARD_DATA_DIR!)).toBe(false);
  });

  it('refuses misuse with one line and exit 2, and a bare command with its usage and exit 2', {
    timeout: 180_000,
  }, async () => {
    const e = env();
    const cases: Array<[string[], string]> = [
      [['frobnicate'], 'unknown command "frobnicate"'],
      [['--bogus'], 'unknown option "--bogus"'],
      [['serve', '--bogus'], "Unknown option '--bogus'"],
      [['serve', '--port'], "Option '--port <value>' argument missing"],
      [['serve', '--port', 'eighty'], '--port must be a whole number from 0 to 65535'],
      [['serve', '--port', '70000'], '--port must be a whole number from 0 to 65535'],
      [['serve', 'now'], "Unexpected argument 'now'"],
      [['keys', '--bogus'], "Unknown option '--bogus'"],
      [['keys', 'frobnicate'], 'unknown keys command "frobnicate"'],
      [['keys', 'create', '--bogus'], "Unknown option '--bogus'"],
      [['keys', 'create', '--name'], "Option '--name <value>' argument missing"],
      [['keys', 'list', 'all'], "Unexpected argument 'all'"],
      [['keys', 'revoke'], 'switchboard keys revoke: missing the key id'],
      [['keys', 'revoke', 'a', 'b'], "Unexpected argument 'b'"],
      [['call', '--bogus'], "Unknown option '--bogus'"],
      [['emulate', '--bogus'], "Unknown option '--bogus'"],
      [['emulate', '--port'], "Option '--port <value>' argument missing"],
      [['loadtest', '--bogus'], "Unknown option '--bogus'"],
    ];
    const runs = await inBatches(
      cases.map(
        ([args]) =>
          () =>
            runCli(args, e, { killAfterMs: KILL_AFTER_MS }),
      ),
    );
    cases.forEach(([args, message], i) => {
      const run = runs[i]!;
      const what = `switchboard ${args.join(' ')}: ${JSON.stringify(run.stderr)}`;
      expect(run.code, what).toBe(2);
      expect(run.stdout, what).toBe('');
      const lines = run.stderr.trimEnd().split('\n');
      expect(lines, what).toHaveLength(1);
      expect(lines[0], what).toContain(message);
      expect(lines[0], what).toMatch(/^switchboard[ :]/);
      expect(lines[0], what).not.toMatch(/ERR_|\bat \S+:\d+/);
    });

    for (const args of [[], ['keys']]) {
      const bare = await runCli(args, e, { killAfterMs: KILL_AFTER_MS });
      expect(bare.code, args.join(' ')).toBe(2);
      expect(bare.stdout).toBe('');
      expect(bare.stderr).toContain(`usage: switchboard ${args.length === 0 ? '<command>' : 'keys'}`);
    }
    expect(existsSync(e.SWITCHBOARD_DATA_DIR!)).toBe(false);
  });

  it('serves on --port and --host, which override PORT and HOST', { timeout: 60_000 }, async () => {
    const e = env();
    const busy = createServer();
    busy.listen(0, '127.0.0.1');
    await once(busy, 'listening');
    const port = await freePort();
    try {
      // Were the flags ignored, PORT (taken) or HOST (not an address of this machine) would fail.
      const serve = await startServeProcess(
        { ...e, PORT: String((busy.address() as { port: number }).port), HOST: '203.0.113.7' },
        ['--port', String(port), '--host', '127.0.0.1'],
      );
      try {
        expect(serve.baseUrl).toBe(`http://127.0.0.1:${port}`);
        expect((await fetch(`${serve.baseUrl}/healthz`)).status).toBe(200);
        // The public URL follows the port actually served.
        expect(serve.output()).toContain(`"publicUrl":"http://localhost:${port}"`);
      } finally {
        serve.child.kill('SIGTERM');
        await once(serve.child, 'exit');
      }
    } finally {
      busy.close();
    }
  });

  it('says in one line that a port is taken, and exits non-zero', { timeout: 60_000 }, async () => {
    const e = env();
    const busy = createServer();
    busy.listen(0, '127.0.0.1');
    await once(busy, 'listening');
    const { port } = busy.address() as { port: number };
    try {
      const run = await runCli(
        ['serve', '--port', String(port), '--host', '127.0.0.1'],
        { ...e, LOG_LEVEL: 'silent' },
        { killAfterMs: KILL_AFTER_MS },
      );
      expect(run.code, run.stderr).toBe(1);
      const lines = run.stderr.trimEnd().split('\n');
      expect(lines, run.stderr).toHaveLength(1);
      expect(lines[0]).toContain(`port ${port} is already in use`);
      expect(lines[0]).not.toMatch(/EADDRINUSE|\bat \S+:\d+/);
    } finally {
      busy.close();
    }
  });
});
