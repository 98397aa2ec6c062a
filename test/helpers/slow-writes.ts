import fs from 'node:fs';

/**
 * Preloaded (`NODE_OPTIONS=--import …`) into a build to make every file write take a while: the
 * first half of the text, a pause, then the rest, as when a loaded machine takes the compiler off
 * the CPU in the middle of writing a module. A process that imports a module in that moment
 * reads half of it. tsc writes each output with `fs.writeSync` on the `fs` object it required,
 * which is this one.
 */

const PAUSE_MS = Number(process.env.SLOW_WRITE_PAUSE_MS ?? '20');
/** A file created at the first slow write, so a test can act while the writing goes on. */
const STARTED_MARK = process.env.SLOW_WRITES_STARTED;
const write = fs.writeSync;
const pause = new Int32Array(new SharedArrayBuffer(4));
let started = false;

fs.writeSync = ((fd: number, data: unknown, ...rest: unknown[]) => {
  // Source maps are never imported: pausing their writes would only lengthen the build.
  if (typeof data !== 'string' || data.length < 256 || data.startsWith('{"version":3,'))
    return (write as (...args: unknown[]) => number)(fd, data, ...rest);
  if (!started && STARTED_MARK) fs.writeFileSync(STARTED_MARK, String(process.pid));
  started = true;
  let half = Math.floor(data.length / 2);
  // Not between the two halves of a surrogate pair.
  if (/[\uD800-\uDBFF]/.test(data[half - 1]!)) half++;
  let written = write(fd, data.slice(0, half), undefined, 'utf8');
  Atomics.wait(pause, 0, 0, PAUSE_MS);
  written += write(fd, data.slice(half), undefined, 'utf8');
  return written;
}) as typeof fs.writeSync;
