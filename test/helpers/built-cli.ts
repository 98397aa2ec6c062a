import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, statSync, utimesSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * Tests that start the CLI run the compiled `dist/`, as an operator does after `npm run build`:
 * starting `node --import tsx src/cli/main.ts` transpiles the whole server first, about twice the
 * CPU of starting the built one, and the process tests start dozens. The projects that start
 * processes name this file as a vitest globalSetup, so the build happens once per run, and only
 * when a source is newer than it.
 */

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const BUILT_CLI = join(ROOT, 'dist/cli/main.js');

/** Builds dist/ with `tsc -p .` (what `npm run build` runs) unless it is newer than every source. */
export function ensureBuilt(): void {
  if (isBuilt()) return;
  try {
    execFileSync(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', '.'], {
      cwd: ROOT,
      encoding: 'utf8',
      stdio: 'pipe',
    });
  } catch (error) {
    const { stdout, stderr } = error as { stdout?: string; stderr?: string };
    throw new Error(
      `npm run build failed, so the tests that start the CLI cannot run:\n${stdout ?? ''}${stderr ?? ''}`,
    );
  }
  // The stamp the next run compares with, whether or not tsc rewrote this file.
  const now = new Date();
  utimesSync(BUILT_CLI, now, now);
}

/** Whether dist/ is there and newer than every source it is built from. */
export function isBuilt(): boolean {
  return existsSync(BUILT_CLI) && statSync(BUILT_CLI).mtimeMs >= newestInputMs();
}

/** The newest modification time of what the build reads (tests are not compiled, so not counted). */
function newestInputMs(): number {
  const config = Math.max(statSync(join(ROOT, 'tsconfig.json')).mtimeMs, statSync(join(ROOT, 'package.json')).mtimeMs);
  return Math.max(config, newestSourceMs(join(ROOT, 'src')));
}

function newestSourceMs(dir: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) newest = Math.max(newest, newestSourceMs(path));
    else if (!entry.name.endsWith('.test.ts')) newest = Math.max(newest, statSync(path).mtimeMs);
  }
  return newest;
}

/** vitest globalSetup hook. */
export function setup(): void {
  ensureBuilt();
}
