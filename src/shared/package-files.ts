import { existsSync } from 'node:fs';
import { dirname, join, relative, sep } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

/**
 * Where the package's own files are, from any of its modules. The build (`dist/`) is a bundle
 * (scripts/build-dist.ts): a module's code runs from a shared chunk in `dist/chunks/`, not from a
 * file beside its source, so a path relative to `import.meta.url` would point somewhere else in
 * the build than in the sources. Paths from the package's root are the same in both.
 */

const HERE = fileURLToPath(import.meta.url);

/** The folder holding package.json: the first one up from this module that has it. */
const PACKAGE_ROOT: string = findRoot(dirname(HERE));

/** Whether this code runs from the build rather than from the TypeScript sources (tests, tsx). */
const FROM_BUILD = !relative(join(PACKAGE_ROOT, 'dist'), HERE).startsWith('..');

function findRoot(from: string): string {
  for (let dir = from; ; dir = dirname(dir)) {
    if (existsSync(join(dir, 'package.json'))) return dir;
    if (dirname(dir) === dir) throw new Error(`no package.json above ${from}`);
  }
}

/** A file of the package, from its root: `packagePath('fixtures', 'audio')`. */
export function packagePath(...parts: string[]): string {
  return join(PACKAGE_ROOT, ...parts);
}

/**
 * The URL (ending in `/`) of a source folder as this code runs it: `dist/<dir>/` from the build,
 * `src/<dir>/` from the sources. A worker module built as an entry of its own sits there.
 */
export function moduleDirUrl(dirInSrc: string): string {
  const dir = join(PACKAGE_ROOT, FROM_BUILD ? 'dist' : 'src', ...dirInSrc.split('/'));
  return pathToFileURL(dir + sep).href;
}
