import { spawn } from 'node:child_process';
import { once } from 'node:events';
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  statSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildDist, builtCli, isDistCurrent } from '../../scripts/build-dist.js';
import { requireBuilt } from '../helpers/built-cli.js';
import { checkoutLookalike, runScript } from '../helpers/readme-blocks.js';
import { removeDir } from '../helpers/test-data.js';

/**
 * `dist/` is what every process test and the README's `npm start` run, so a build must never be
 * seen half done: not while the CLI starts from it, not from a second build, and not from npm
 * running `prepare` again when `npx switchboard` installs the checkout into its cache. Each test
 * works on a checkout of its own (src/ and the build configuration copied, a copy of the current
 * dist/), so the checkout's dist/ is never rebuilt under the other test files' processes.
 */

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const BUILD_SCRIPT = join(ROOT, 'scripts/build-dist.ts');
const SLOW_WRITES = pathToFileURL(join(ROOT, 'test/helpers/slow-writes.ts')).href;
// The build takes a few seconds; npx's install in the last test takes most of this on a loaded machine.
const BUILD_TIMEOUT_MS = 300_000;

const dirs: string[] = [];

beforeAll(() => requireBuilt());

afterAll(() => {
  for (const dir of dirs.splice(0)) removeDir(dir);
});

/** A checkout of its own, with a dist/ newer than its sources. */
function copyOfCheckout(): string {
  const dir = mkdtempSync(join(tmpdir(), 'switchboard-build-'));
  dirs.push(dir);
  for (const entry of ['src', 'bin', 'package.json', 'tsconfig.json']) {
    cpSync(join(ROOT, entry), join(dir, entry), { recursive: true });
  }
  for (const entry of ['node_modules', 'scripts']) symlinkSync(join(ROOT, entry), join(dir, entry));
  // Copied after the sources, so it is newer than them: current.
  cpSync(join(ROOT, 'dist'), join(dir, 'dist'), { recursive: true });
  return dir;
}

interface Run {
  code: number | null;
  output: string;
}

async function run(args: string[], options: { cwd: string; env?: Record<string, string> }): Promise<Run> {
  const child = spawn(process.execPath, args, {
    cwd: options.cwd,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...options.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const [code] = (await once(child, 'exit')) as [number | null];
  return { code, output };
}

/** Every file of a dist/, with what identifies its content on disk: a rewrite changes one or the other. */
function snapshot(dist: string): Record<string, string> {
  const files: Record<string, string> = {};
  for (const entry of readdirSync(dist, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const path = join(entry.parentPath, entry.name);
    const stat = statSync(path);
    files[path.slice(dist.length + 1)] = `inode ${stat.ino}, modified ${stat.mtimeMs}`;
  }
  return files;
}

describe('building dist/', () => {
  it('the CLI starts whole while two builds run at once, and only one of them builds', {
    timeout: BUILD_TIMEOUT_MS,
  }, async () => {
    const checkout = copyOfCheckout();
    // A source newer than dist/: both builds find it out of date.
    utimesSync(builtCli(checkout), 0, 0);
    expect(isDistCurrent(checkout)).toBe(false);

    // Every file write of the build is slow, as on a loaded machine, so the CLI starts below
    // import modules while they are being written (if the build writes them where they are read).
    const writing = join(checkout, '.build-writing');
    // 150 ms per file: the bundle is about 50 files written in a second, and a CLI start on a
    // loaded machine takes a second or two, so the writing must last long enough for several.
    const env = {
      NODE_OPTIONS: `--import tsx --import ${SLOW_WRITES}`,
      SLOW_WRITES_STARTED: writing,
      SLOW_WRITE_PAUSE_MS: '150',
    };
    // Whole milliseconds: a file's time stamp may be rounded down from the moment it was written.
    const buildsStartedMs = Math.floor(Date.now()) - 1;
    const builds = Promise.all([
      run(['--import', 'tsx', BUILD_SCRIPT], { cwd: checkout, env }),
      run(['--import', 'tsx', BUILD_SCRIPT], { cwd: checkout, env }),
    ]);
    let building = true;
    void builds.finally(() => {
      building = false;
    });
    // `serve --help` imports the whole server (as `serve` does) before it prints its usage. One
    // start after another: with each write paused halfway, some module is half written at almost
    // every moment of the writing, so a build that wrote where the CLI reads would break most of
    // the starts (about one a second here), not one in many. A second loop beside this one would
    // only take the build's CPU on a two-core machine.
    const starts: Run[] = [];
    const keepStarting = async () => {
      // From the build's first write to the end.
      while (building && !existsSync(writing)) await new Promise((resolve) => setTimeout(resolve, 50));
      while (building) starts.push(await run([builtCli(checkout), 'serve', '--help'], { cwd: checkout }));
    };
    const [outcomes] = await Promise.all([builds, keepStarting()]);

    for (const build of outcomes) expect(build.code, build.output).toBe(0);
    // One built; the other waited for it, then found dist/ current.
    const said = outcomes.map((build) => (/^dist\/ built in/m.test(build.output) ? 'built' : build.output.trim()));
    expect(said.sort()).toEqual([
      'built',
      'dist/ is newer than every source: left as it is (npm run build rebuilds it)',
    ]);
    expect(isDistCurrent(checkout)).toBe(true);
    // Every module this build wrote is plain ASCII, so V8 keeps its source at one byte a character
    // (scripts/ascii-source.ts). Chunks of builds before, kept for a day, are as they were written.
    const notAscii = readdirSync(join(checkout, 'dist'), { recursive: true, encoding: 'utf8' }).filter((file) => {
      const path = join(checkout, 'dist', file);
      return (
        file.endsWith('.js') &&
        statSync(path).mtimeMs >= buildsStartedMs &&
        /[\u0080-\uffff]/.test(readFileSync(path, 'utf8'))
      );
    });
    expect(notAscii).toEqual([]);
    const broken = starts.filter((start) => start.code !== 0 || !start.output.startsWith('usage: switchboard serve'));
    expect(broken.map((start) => start.output)).toEqual([]);
    // The CLI did start while the build wrote.
    expect(existsSync(writing)).toBe(true);
    expect(starts.length).toBeGreaterThanOrEqual(2);
  });

  it('a lock whose pid is not written yet is waited for, never taken over', async () => {
    const checkout = copyOfCheckout();
    utimesSync(builtCli(checkout), 0, 0);
    // What another build's lock looks like between creating its folder and writing its pid (an
    // older version of the script made its lock in two such steps; a build that read the empty
    // pid as a dead owner's took the lock and compiled beside the first).
    mkdirSync(join(checkout, '.dist-lock'));
    writeFileSync(join(checkout, '.dist-lock', 'pid'), '');
    await expect(buildDist({ root: checkout, lockWaitMs: 500 })).rejects.toThrow(/another build of this checkout/);
    expect(existsSync(join(checkout, '.dist-lock', 'pid'))).toBe(true);
    expect(readdirSync(checkout).filter((entry) => entry.startsWith('.dist-next-'))).toEqual([]);
  });

  it('npx in a folder of the checkout leaves a current dist/ as it is', { timeout: BUILD_TIMEOUT_MS }, async () => {
    const checkout = copyOfCheckout();
    expect(isDistCurrent(checkout)).toBe(true);
    const before = snapshot(join(checkout, 'dist'));
    // The README's walk-throughs run `npx switchboard …` in a folder that links the checkout's
    // entries. The first npx in a folder installs the package from it into npx's cache, which runs
    // its `prepare` script there: while a server started from dist/ a moment before reads it.
    const reader = checkoutLookalike(checkout);
    dirs.push(reader);
    const npx = await runScript('npx switchboard --help', {
      cwd: reader,
      timeoutMs: BUILD_TIMEOUT_MS - 10_000,
      env: {
        PATH: process.env.PATH ?? '',
        HOME: process.env.HOME ?? '',
        // A cache of its own, so npx does install (and the user's cache keeps no entry per run).
        npm_config_cache: join(reader, '.npm-cache'),
      },
    });
    expect(npx.code, npx.output).toBe(0);
    expect(npx.output).toContain('usage: switchboard <command>');
    const after = snapshot(join(checkout, 'dist'));
    const rewritten = Object.keys(before).filter((file) => after[file] !== before[file]);
    expect({ rewritten: rewritten.length, first: rewritten.slice(0, 3) }).toEqual({ rewritten: 0, first: [] });
  });
});
