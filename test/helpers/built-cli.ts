import { fileURLToPath } from 'node:url';
import { buildDist, builtCli, isDistCurrent } from '../../scripts/build-dist.js';

/**
 * Tests that start the CLI run the compiled `dist/`, as an operator does after `npm run build`:
 * starting `node --import tsx src/cli/main.ts` transpiles the whole server first, about twice the
 * CPU of starting the built one, and the process tests start dozens. The projects that start
 * processes name this file as a vitest globalSetup. vitest runs every project's global setup, one
 * after another, before the first test file, so the build happens then or not at all: the first
 * setup builds when a source is newer than dist/, the others find it current.
 * `scripts/build-dist.ts` builds under a lock and renames each file into place, so even a build
 * started from outside (a second run in the same checkout, `npm run build`) never shows a process a
 * half-written module.
 */

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const BUILT_CLI = builtCli(ROOT);

/** Builds dist/ (what `npm run build` does) unless it is newer than every source. */
export async function ensureBuilt(): Promise<void> {
  const startedMs = Date.now();
  try {
    if ((await buildDist({ root: ROOT })) === 'built')
      console.log(`[build] dist/ was older than src/: rebuilt in ${((Date.now() - startedMs) / 1000).toFixed(1)} s`);
  } catch (error) {
    throw new Error(`npm run build failed, so the tests that start the CLI cannot run:\n${(error as Error).message}`);
  }
}

/** Whether dist/ is there and newer than every source it is built from. */
export function isBuilt(): boolean {
  return isDistCurrent(ROOT);
}

/**
 * Throws unless dist/ is current. A test file never builds: it would rewrite dist/ under the
 * processes other files have started; an older dist/ would test old code and pass.
 */
export function requireBuilt(): void {
  if (!isBuilt())
    throw new Error(
      "dist/ is missing or older than src/: add test/helpers/built-cli.ts to this project's globalSetup in vitest.config.ts",
    );
}

/** vitest globalSetup hook. */
export async function setup(): Promise<void> {
  await ensureBuilt();
}
