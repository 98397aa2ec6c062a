/**
 * A minimal in-memory WASI preview1 host, just enough to run a command-line WASI program that
 * reads argv and writes output files, with no real file system access.
 *
 * Why not node:wasi: on Node 20 (20.20.2 here) node:wasi crashes the whole process (SIGSEGV /
 * SIGABRT in V8) after a few runs of flite.wasm with a reused compiled module; the crash goes
 * away with --no-turbo-fast-api-calls, which points at node:wasi's V8 fast-API bindings (see
 * nodejs/node#52402, reported with this very flite.wasm, and #53087). A service handling calls
 * cannot risk that, and this host is small: flite only needs argv, a clock, one preopened
 * directory to create its WAV in, and stdout/stderr. As a bonus no temporary files are
 * written, so concurrent syntheses cannot clash and nothing needs cleaning up.
 *
 * Supported: args_*, clock_time_get, fd_prestat_*, fd_fdstat_get/set_flags, path_open (create or
 * open files in the single preopened directory), fd_read/fd_write/fd_seek/fd_close on those files,
 * stdout/stderr capture, proc_exit. Anything else the module imports is answered with ENOSYS.
 */

/** The import module name of WASI preview1. */
export const WASI_MODULE = 'wasi_snapshot_preview1';

/** WASI errno values used here. */
const ERRNO_SUCCESS = 0;
const ERRNO_BADF = 8;
const ERRNO_EXIST = 20;
const ERRNO_INVAL = 28;
const ERRNO_ISDIR = 31;
const ERRNO_NOENT = 44;
const ERRNO_NOSYS = 52;
const ERRNO_NOTDIR = 54;
const ERRNO_NOTCAPABLE = 76;
const ERRNO_SPIPE = 70;

const FILETYPE_CHARACTER_DEVICE = 2;
const FILETYPE_DIRECTORY = 3;
const FILETYPE_REGULAR_FILE = 4;

const OFLAGS_CREAT = 1;
const OFLAGS_DIRECTORY = 2;
const OFLAGS_EXCL = 4;
const OFLAGS_TRUNC = 8;

const WHENCE_SET = 0;
const WHENCE_CUR = 1;
const WHENCE_END = 2;

const FD_STDIN = 0;
const FD_STDOUT = 1;
const FD_STDERR = 2;
/** The first fd after stdio is the preopened directory, as wasi-libc expects. */
const FD_PREOPEN = 3;

/** Every rights bit; this host does not restrict rights per fd. */
const ALL_RIGHTS = (1n << 30n) - 1n;

/** Caps captured stdout/stderr, which are only kept for error messages. */
const MAX_CAPTURED_OUTPUT_BYTES = 16 * 1024;

const utf8 = new TextEncoder();

/** Thrown from proc_exit to unwind the wasm stack; carries the exit code. */
class WasiExit {
  constructor(readonly code: number) {}
}

interface MemoryFile {
  data: Uint8Array;
  length: number;
}

interface OpenFile {
  file: MemoryFile;
  position: number;
}

interface WasmMemory {
  readonly buffer: ArrayBuffer;
}

export interface MemoryWasiOptions {
  /** argv, including argv[0] (the program name). */
  args: readonly string[];
  /** Guest path of the single preopened directory, e.g. "/out". */
  preopenPath: string;
}

export interface WasiRunResult {
  exitCode: number;
  stdout: string;
  stderr: string;
}

export class MemoryWasi {
  /** Files in the preopened directory by relative path; filled by the program. */
  readonly files = new Map<string, MemoryFile>();
  private readonly argBytes: Uint8Array[];
  private readonly preopenName: Uint8Array;
  private readonly openFiles = new Map<number, OpenFile>();
  private nextFd = FD_PREOPEN + 1;
  private memory: WasmMemory | null = null;
  private readonly stdout: number[] = [];
  private readonly stderr: number[] = [];

  constructor(options: MemoryWasiOptions) {
    this.argBytes = options.args.map((arg) => utf8.encode(`${arg}\0`));
    this.preopenName = utf8.encode(options.preopenPath);
  }

  /**
   * The import object to instantiate a module with. `requiredNames` are the module's
   * wasi_snapshot_preview1 imports; any this host does not implement answer ENOSYS, so the
   * module still links and only fails if it actually makes such a call.
   */
  importObject(requiredNames: readonly string[] = []): Record<string, Record<string, (...args: never[]) => number>> {
    const syscalls = this.syscalls();
    for (const name of requiredNames) {
      if (!(name in syscalls)) syscalls[name] = unsupportedSyscall;
    }
    return { [WASI_MODULE]: syscalls };
  }

  /** Runs `_start` of an instance created with `imports`. Traps propagate as exceptions. */
  run(instance: { exports: Record<string, unknown> }): WasiRunResult {
    const memory = instance.exports.memory as WasmMemory | undefined;
    const start = instance.exports._start as (() => void) | undefined;
    if (!memory || typeof start !== 'function') throw new Error('WASI module exports no memory or _start');
    this.memory = memory;
    let exitCode = 0;
    try {
      start();
    } catch (error) {
      if (!(error instanceof WasiExit)) throw error;
      exitCode = error.code;
    } finally {
      this.memory = null;
    }
    return {
      exitCode,
      stdout: Buffer.from(this.stdout).toString('utf8'),
      stderr: Buffer.from(this.stderr).toString('utf8'),
    };
  }

  /** Contents of a file the program wrote into the preopened directory, or undefined. */
  readFile(relativePath: string): Uint8Array | undefined {
    const file = this.files.get(relativePath);
    return file ? file.data.subarray(0, file.length) : undefined;
  }

  private view(): DataView {
    if (!this.memory) throw new Error('WASI call outside run()');
    return new DataView(this.memory.buffer);
  }

  private bytes(): Uint8Array {
    if (!this.memory) throw new Error('WASI call outside run()');
    return new Uint8Array(this.memory.buffer);
  }

  private syscalls(): Record<string, (...args: never[]) => number> {
    return {
      args_sizes_get: (argcPtr: number, bufSizePtr: number) => {
        const view = this.view();
        view.setUint32(argcPtr, this.argBytes.length, true);
        view.setUint32(
          bufSizePtr,
          this.argBytes.reduce((n, a) => n + a.length, 0),
          true,
        );
        return ERRNO_SUCCESS;
      },
      args_get: (argvPtr: number, bufPtr: number) => {
        const view = this.view();
        const memory = this.bytes();
        let at = bufPtr;
        this.argBytes.forEach((arg, i) => {
          view.setUint32(argvPtr + 4 * i, at, true);
          memory.set(arg, at);
          at += arg.length;
        });
        return ERRNO_SUCCESS;
      },
      clock_time_get: (clockId: number, _precision: bigint, timePtr: number) => {
        // 0 = realtime; everything else (monotonic, cpu time) is served from the monotonic clock.
        const ns = clockId === 0 ? BigInt(Date.now()) * 1_000_000n : process.hrtime.bigint();
        this.view().setBigUint64(timePtr, ns, true);
        return ERRNO_SUCCESS;
      },
      fd_prestat_get: (fd: number, ptr: number) => {
        if (fd !== FD_PREOPEN) return ERRNO_BADF;
        const view = this.view();
        view.setUint8(ptr, 0); // preopen type: directory
        view.setUint32(ptr + 4, this.preopenName.length, true);
        return ERRNO_SUCCESS;
      },
      fd_prestat_dir_name: (fd: number, pathPtr: number, pathLen: number) => {
        if (fd !== FD_PREOPEN) return ERRNO_BADF;
        if (pathLen < this.preopenName.length) return ERRNO_INVAL;
        this.bytes().set(this.preopenName, pathPtr);
        return ERRNO_SUCCESS;
      },
      fd_fdstat_get: (fd: number, ptr: number) => {
        let filetype: number;
        if (fd === FD_STDIN || fd === FD_STDOUT || fd === FD_STDERR) filetype = FILETYPE_CHARACTER_DEVICE;
        else if (fd === FD_PREOPEN) filetype = FILETYPE_DIRECTORY;
        else if (this.openFiles.has(fd)) filetype = FILETYPE_REGULAR_FILE;
        else return ERRNO_BADF;
        const view = this.view();
        view.setUint8(ptr, filetype);
        view.setUint16(ptr + 2, 0, true); // fdflags
        view.setBigUint64(ptr + 8, ALL_RIGHTS, true);
        view.setBigUint64(ptr + 16, ALL_RIGHTS, true);
        return ERRNO_SUCCESS;
      },
      fd_fdstat_set_flags: (fd: number) => (this.isOpen(fd) ? ERRNO_SUCCESS : ERRNO_BADF),
      path_open: (
        dirFd: number,
        _dirFlags: number,
        pathPtr: number,
        pathLen: number,
        oflags: number,
        _rightsBase: bigint,
        _rightsInheriting: bigint,
        _fdFlags: number,
        fdPtr: number,
      ) => {
        if (dirFd !== FD_PREOPEN) return this.isOpen(dirFd) ? ERRNO_NOTDIR : ERRNO_BADF;
        const path = Buffer.from(this.bytes().subarray(pathPtr, pathPtr + pathLen)).toString('utf8');
        // Only plain names inside the preopened directory; no escaping it, no subdirectories.
        if (path === '' || path.includes('/') || path === '.' || path === '..') {
          return path === '.' ? ERRNO_ISDIR : ERRNO_NOTCAPABLE;
        }
        if (oflags & OFLAGS_DIRECTORY) return ERRNO_NOTDIR;
        let file = this.files.get(path);
        if (file && oflags & OFLAGS_CREAT && oflags & OFLAGS_EXCL) return ERRNO_EXIST;
        if (!file) {
          if (!(oflags & OFLAGS_CREAT)) return ERRNO_NOENT;
          file = { data: new Uint8Array(64 * 1024), length: 0 };
          this.files.set(path, file);
        }
        if (oflags & OFLAGS_TRUNC) file.length = 0;
        const fd = this.nextFd++;
        this.openFiles.set(fd, { file, position: 0 });
        this.view().setUint32(fdPtr, fd, true);
        return ERRNO_SUCCESS;
      },
      fd_write: (fd: number, iovsPtr: number, iovsLen: number, writtenPtr: number) => {
        const view = this.view();
        const memory = this.bytes();
        const open = this.openFiles.get(fd);
        if (!open && fd !== FD_STDOUT && fd !== FD_STDERR) return fd === FD_PREOPEN ? ERRNO_ISDIR : ERRNO_BADF;
        let written = 0;
        for (let i = 0; i < iovsLen; i++) {
          const ptr = view.getUint32(iovsPtr + 8 * i, true);
          const len = view.getUint32(iovsPtr + 8 * i + 4, true);
          const chunk = memory.subarray(ptr, ptr + len);
          if (open) writeAt(open, chunk);
          else capture(fd === FD_STDOUT ? this.stdout : this.stderr, chunk);
          written += len;
        }
        view.setUint32(writtenPtr, written, true);
        return ERRNO_SUCCESS;
      },
      fd_read: (fd: number, iovsPtr: number, iovsLen: number, readPtr: number) => {
        const view = this.view();
        const memory = this.bytes();
        if (fd === FD_STDIN) {
          view.setUint32(readPtr, 0, true); // stdin is empty
          return ERRNO_SUCCESS;
        }
        const open = this.openFiles.get(fd);
        if (!open) return ERRNO_BADF;
        let read = 0;
        for (let i = 0; i < iovsLen; i++) {
          const ptr = view.getUint32(iovsPtr + 8 * i, true);
          const len = view.getUint32(iovsPtr + 8 * i + 4, true);
          const available = Math.max(0, Math.min(len, open.file.length - open.position));
          memory.set(open.file.data.subarray(open.position, open.position + available), ptr);
          open.position += available;
          read += available;
          if (available < len) break;
        }
        view.setUint32(readPtr, read, true);
        return ERRNO_SUCCESS;
      },
      fd_seek: (fd: number, offset: bigint, whence: number, newOffsetPtr: number) => {
        const open = this.openFiles.get(fd);
        if (!open) return this.isOpen(fd) ? ERRNO_SPIPE : ERRNO_BADF;
        const base =
          whence === WHENCE_SET
            ? 0
            : whence === WHENCE_CUR
              ? open.position
              : whence === WHENCE_END
                ? open.file.length
                : -1;
        if (base < 0) return ERRNO_INVAL;
        const target = base + Number(offset);
        if (target < 0) return ERRNO_INVAL;
        open.position = target;
        this.view().setBigUint64(newOffsetPtr, BigInt(target), true);
        return ERRNO_SUCCESS;
      },
      fd_close: (fd: number) => {
        if (this.openFiles.delete(fd)) return ERRNO_SUCCESS;
        return fd <= FD_PREOPEN ? ERRNO_SUCCESS : ERRNO_BADF;
      },
      proc_exit: (code: number) => {
        throw new WasiExit(code);
      },
    };
  }

  private isOpen(fd: number): boolean {
    return fd >= 0 && (fd <= FD_PREOPEN || this.openFiles.has(fd));
  }
}

function writeAt(open: OpenFile, chunk: Uint8Array): void {
  const file = open.file;
  const end = open.position + chunk.length;
  if (end > file.data.length) {
    const grown = new Uint8Array(Math.max(end, file.data.length * 2));
    grown.set(file.data.subarray(0, file.length), 0);
    file.data = grown;
  }
  // Seeking past the end and writing leaves a zero-filled gap, as on a real file.
  if (open.position > file.length) file.data.fill(0, file.length, open.position);
  file.data.set(chunk, open.position);
  open.position = end;
  if (end > file.length) file.length = end;
}

function capture(sink: number[], chunk: Uint8Array): void {
  const room = MAX_CAPTURED_OUTPUT_BYTES - sink.length;
  for (let i = 0; i < chunk.length && i < room; i++) sink.push(chunk[i]!);
}

/** Answer to imports a module declares that this host does not implement. */
function unsupportedSyscall(): number {
  return ERRNO_NOSYS;
}
