import fs from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';

/**
 * Preloaded (`NODE_OPTIONS=--import …`) into a build to make every file write take a while: the
 * first half of the file, a pause, then the rest, as when a loaded machine takes the build off
 * the CPU in the middle of writing a module. A process that imports a module in that moment
 * reads half of it. The build writes each output with `fs.writeFileSync`, which is patched here
 * (and in `node:fs`'s ES module exports, which the build imports it from).
 */

const PAUSE_MS = Number(process.env.SLOW_WRITE_PAUSE_MS ?? '20');
/** A file created at the first slow write, so a test can act while the writing goes on. */
const STARTED_MARK = process.env.SLOW_WRITES_STARTED;
const writeFile = fs.writeFileSync;
const pause = new Int32Array(new SharedArrayBuffer(4));

fs.writeFileSync = ((path: fs.PathOrFileDescriptor, data: unknown, ...rest: unknown[]) => {
  // Source maps are never imported: pausing their writes would only lengthen the build.
  const slow = typeof path === 'string' && !path.endsWith('.map') && path !== STARTED_MARK;
  const bytes = typeof data === 'string' ? Buffer.from(data) : data instanceof Uint8Array ? data : undefined;
  if (!slow || !bytes || bytes.length < 256) {
    (writeFile as (...args: unknown[]) => void)(path, data, ...rest);
    return;
  }
  if (STARTED_MARK && !fs.existsSync(STARTED_MARK)) writeFile(STARTED_MARK, String(process.pid));
  const half = Math.floor(bytes.length / 2);
  writeFile(path, bytes.subarray(0, half));
  Atomics.wait(pause, 0, 0, PAUSE_MS);
  writeFile(path, bytes.subarray(half), { flag: 'a' });
}) as typeof fs.writeFileSync;
syncBuiltinESMExports();
