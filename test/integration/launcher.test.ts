import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { requireBuilt } from '../helpers/built-cli.js';
import { stopProcesses, untilOutput } from '../helpers/cli-process.js';
import { removeDir } from '../helpers/test-data.js';

/**
 * bin/switchboard, what `npm start`, `npx switchboard` and the image run: it sets malloc's
 * threshold (unless the operator did) and then is node, not a shell that waits on a node, so
 * signals, exit codes and /proc figures are the server's own.
 */

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const children: ChildProcess[] = [];
const dirs: string[] = [];

afterEach(async () => {
  await stopProcesses(children);
  for (const dir of dirs.splice(0)) removeDir(dir);
});

/** Starts the emulators (a command that stays up) through `launcher`, and waits for their first line. */
async function startThrough(launcher: string, env: Record<string, string> = {}): Promise<ChildProcess> {
  const child = spawn(launcher, ['emulate', '--port', '0'], {
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  await untilOutput(child, /vendor emulators listening on/);
  return child;
}

function procStrings(pid: number, file: 'cmdline' | 'environ'): string[] {
  return readFileSync(`/proc/${pid}/${file}`, 'utf8').split('\0').filter(Boolean);
}

describe('bin/switchboard', () => {
  it('runs the built CLI as node in its own place, with malloc threshold pinned, from a link as npm makes', {
    timeout: 60_000,
  }, async () => {
    requireBuilt();
    // npm links a package's bin into node_modules/.bin; the launcher finds dist/ from its real path.
    const dir = mkdtempSync(join(tmpdir(), 'switchboard-bin-'));
    dirs.push(dir);
    const link = join(dir, 'switchboard');
    symlinkSync(join(ROOT, 'bin/switchboard'), link);
    const child = await startThrough(link);
    const [program, script, command] = procStrings(child.pid!, 'cmdline');
    expect({ program, script, command }).toEqual({
      program: 'node',
      script: join(ROOT, 'dist/cli/main.js'),
      command: 'emulate',
    });
    expect(procStrings(child.pid!, 'environ')).toContain('MALLOC_MMAP_THRESHOLD_=131072');
  });

  it('gives node the options in SWITCHBOARD_NODE_ARGS, before the script', { timeout: 60_000 }, async () => {
    requireBuilt();
    const child = await startThrough(join(ROOT, 'bin/switchboard'), {
      SWITCHBOARD_NODE_ARGS: '--stack-trace-limit=7 --max-semi-space-size=4',
    });
    expect(procStrings(child.pid!, 'cmdline').slice(0, 4)).toEqual([
      'node',
      '--stack-trace-limit=7',
      '--max-semi-space-size=4',
      join(ROOT, 'dist/cli/main.js'),
    ]);
  });

  it("keeps an operator's own threshold", { timeout: 60_000 }, async () => {
    requireBuilt();
    const child = await startThrough(join(ROOT, 'bin/switchboard'), { MALLOC_MMAP_THRESHOLD_: '262144' });
    const environ = procStrings(child.pid!, 'environ');
    expect(environ.filter((entry) => entry.startsWith('MALLOC_MMAP_THRESHOLD_='))).toEqual([
      'MALLOC_MMAP_THRESHOLD_=262144',
    ]);
  });
});
