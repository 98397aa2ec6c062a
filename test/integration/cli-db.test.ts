import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/store/database.js';
import { freePort } from '../helpers/free-port.js';
import { runCli } from '../helpers/cli-process.js';
import { removeDir, tempDataDir } from '../helpers/test-data.js';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) removeDir(dir);
});

function dir(): string {
  const path = tempDataDir();
  dirs.push(path);
  return path;
}

/** A clean error: one line naming the problem, no stack trace. */
function expectCleanError(result: { code: number; stderr: string }, code: number, text: string): void {
  expect(result.code, result.stderr).toBe(code);
  expect(result.stderr).toContain(text);
  expect(result.stderr).not.toMatch(/\n\s+at /);
}

describe('switchboard db', () => {
  it('prints its usage with --help, and refuses missing or bad arguments with the usage', async () => {
    const help = await runCli(['db', '--help'], {});
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('usage: switchboard db copy --from');
    expect(help.stdout).toContain('--replace');
    expect((await runCli(['db', 'copy', '--help'], {})).stdout).toContain('usage: switchboard db copy');

    const cases: Array<[string[], string]> = [
      [['db'], 'missing subcommand'],
      [['db', 'move'], 'unknown subcommand "move"'],
      [['db', 'copy', '--to', 'postgres://localhost/x'], 'missing --from'],
      [['db', 'copy', '--from', '/tmp'], 'missing --to'],
      [
        ['db', 'copy', '--from', '/tmp', '--to', 'mysql://localhost/x'],
        '--to must be a postgres:// or postgresql:// URL',
      ],
      [['db', 'copy', '--from', '/tmp', '--to', 'postgres://localhost/x', '--force'], "Unknown option '--force'"],
    ];
    for (const [args, message] of cases) {
      const result = await runCli(args, {});
      expectCleanError(result, 2, message);
      expect(result.stderr, args.join(' ')).toContain('usage: switchboard db copy');
    }
  });

  it('says so when the source is missing or not a SQLite store, without touching the target', async () => {
    const empty = dir();
    expectCleanError(
      await runCli(['db', 'copy', '--from', join(empty, 'nothing'), '--to', 'postgres://localhost:1/x'], {}),
      1,
      `no SQLite store at ${join(empty, 'nothing')}`,
    );
    // A data dir without a store: no store is created by looking for one.
    expectCleanError(
      await runCli(['db', 'copy', '--from', empty, '--to', 'postgres://localhost:1/x'], {}),
      1,
      'no SQLite store at',
    );
    const notSqlite = join(empty, 'notes.txt');
    writeFileSync(notSqlite, 'these are not the tables you are looking for\n'.repeat(100));
    expectCleanError(
      await runCli(['db', 'copy', '--from', notSqlite, '--to', 'postgres://localhost:1/x'], {}),
      1,
      `${notSqlite} is not a SQLite store`,
    );
  });

  it('says so when the target cannot be reached, without showing its password', async () => {
    const dataDir = dir();
    await (await openDatabase(dataDir)).close();
    const port = await freePort(); // nothing listens there
    const result = await runCli(
      ['db', 'copy', '--from', dataDir, '--to', `postgres://switchboard:hunter2@localhost:${port}/switchboard`],
      {},
    );
    expectCleanError(
      result,
      1,
      `cannot reach the PostgreSQL store at postgres://switchboard:****@localhost:${port}/switchboard`,
    );
    expect(result.stderr).toContain('ECONNREFUSED');
    expect(result.stderr).not.toContain('hunter2');
  });
});

describe('DATABASE_URL and the key variables', () => {
  it('refuse values that are not a PostgreSQL URL or a 32-byte base64 key, naming the variable', async () => {
    const bad = await runCli(['serve'], {
      DATABASE_URL: 'mysql://localhost/switchboard',
      SWITCHBOARD_SECRET_KEY: 'c2hvcnQ=',
      SWITCHBOARD_DATA_DIR: dir(),
    });
    expectCleanError(bad, 1, 'DATABASE_URL: must be a postgres:// or postgresql:// URL');
    expect(bad.stderr).toContain('SWITCHBOARD_SECRET_KEY: must be 32 bytes in base64');
  });

  it('stop serve with one line when the PostgreSQL store cannot be reached', async () => {
    const port = await freePort();
    const result = await runCli(['serve'], {
      DATABASE_URL: `postgresql://localhost:${port}/switchboard`,
      SWITCHBOARD_DATA_DIR: dir(),
      PORT: '0',
    });
    expectCleanError(
      result,
      1,
      `switchboard: cannot reach the PostgreSQL store at postgresql://localhost:${port}/switchboard`,
    );
  });
});
