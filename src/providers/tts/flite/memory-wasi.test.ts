import { describe, expect, it } from 'vitest';
import { MemoryWasi, WASI_MODULE } from './memory-wasi.js';

type Syscall = (...args: Array<number | bigint>) => number;

/**
 * Runs `program` as the module's `_start`, with `sys` bound to the host's syscalls and a 64 KiB
 * linear memory, the way a WASI module would call them.
 */
function runProgram(
  host: MemoryWasi,
  program: (sys: Record<string, Syscall>, memory: DataView) => void,
  names: string[] = [],
) {
  const buffer = new ArrayBuffer(65536);
  const sys = host.importObject(names)[WASI_MODULE] as unknown as Record<string, Syscall>;
  return host.run({ exports: { memory: { buffer }, _start: () => program(sys, new DataView(buffer)) } });
}

const text = new TextEncoder();
const readString = (memory: DataView, ptr: number, len: number) =>
  Buffer.from(memory.buffer, ptr, len).toString('utf8');
const writeString = (memory: DataView, ptr: number, value: string) => {
  const bytes = text.encode(value);
  new Uint8Array(memory.buffer).set(bytes, ptr);
  return bytes.length;
};

describe('MemoryWasi', () => {
  it('passes argv as NUL-terminated UTF-8', () => {
    const host = new MemoryWasi({ args: ['flite', '-t', 'héllo'], preopenPath: '/out' });
    let argv: string[] = [];
    runProgram(host, (sys, memory) => {
      expect(sys.args_sizes_get!(0, 4)).toBe(0);
      const argc = memory.getUint32(0, true);
      expect(memory.getUint32(4, true)).toBe('flite\0-t\0héllo\0'.length + 1); // é is 2 bytes
      sys.args_get!(100, 200);
      argv = Array.from({ length: argc }, (_, i) => {
        const ptr = memory.getUint32(100 + 4 * i, true);
        let end = ptr;
        while (memory.getUint8(end) !== 0) end++;
        return readString(memory, ptr, end - ptr);
      });
    });
    expect(argv).toEqual(['flite', '-t', 'héllo']);
  });

  it('announces one preopened directory as fd 3', () => {
    const host = new MemoryWasi({ args: ['x'], preopenPath: '/out' });
    runProgram(host, (sys, memory) => {
      expect(sys.fd_prestat_get!(3, 0)).toBe(0);
      expect(memory.getUint32(4, true)).toBe(4);
      expect(sys.fd_prestat_dir_name!(3, 16, 4)).toBe(0);
      expect(readString(memory, 16, 4)).toBe('/out');
      expect(sys.fd_prestat_get!(4, 0)).toBe(8); // EBADF ends the preopen scan
    });
  });

  it('creates, writes, seeks and reads back a file in memory', () => {
    const host = new MemoryWasi({ args: ['x'], preopenPath: '/out' });
    runProgram(host, (sys, memory) => {
      const len = writeString(memory, 1000, 'a.wav');
      expect(sys.path_open!(3, 0, 1000, len, 0, 0n, 0n, 0, 0)).toBe(44); // ENOENT without O_CREAT
      expect(sys.path_open!(3, 0, 1000, len, 1 | 8, 0n, 0n, 0, 0)).toBe(0);
      const fd = memory.getUint32(0, true);
      // Two iovecs: "RIFF" and "1234".
      writeString(memory, 2000, 'RIFF1234');
      memory.setUint32(3000, 2000, true);
      memory.setUint32(3004, 4, true);
      memory.setUint32(3008, 2004, true);
      memory.setUint32(3012, 4, true);
      expect(sys.fd_write!(fd, 3000, 2, 3100)).toBe(0);
      expect(memory.getUint32(3100, true)).toBe(8);
      // Patch a header field after the fact, as WAV writers do.
      expect(sys.fd_seek!(fd, 4n, 0, 3200)).toBe(0);
      writeString(memory, 2100, 'abcd');
      memory.setUint32(3000, 2100, true);
      memory.setUint32(3004, 4, true);
      expect(sys.fd_write!(fd, 3000, 1, 3100)).toBe(0);
      expect(sys.fd_seek!(fd, 0n, 2, 3200)).toBe(0);
      expect(memory.getBigUint64(3200, true)).toBe(8n);
      // Read it back from the start.
      sys.fd_seek!(fd, 0n, 0, 3200);
      memory.setUint32(3000, 4000, true);
      memory.setUint32(3004, 100, true);
      expect(sys.fd_read!(fd, 3000, 1, 3100)).toBe(0);
      expect(memory.getUint32(3100, true)).toBe(8);
      expect(readString(memory, 4000, 8)).toBe('RIFFabcd');
      expect(sys.fd_close!(fd)).toBe(0);
      expect(sys.fd_close!(fd)).toBe(8);
    });
    expect(Buffer.from(host.readFile('a.wav')!).toString()).toBe('RIFFabcd');
    expect(host.readFile('missing.wav')).toBeUndefined();
  });

  it('refuses paths outside the preopened directory', () => {
    const host = new MemoryWasi({ args: ['x'], preopenPath: '/out' });
    runProgram(host, (sys, memory) => {
      for (const path of ['../etc/passwd', 'sub/dir.wav', '..']) {
        const len = writeString(memory, 1000, path);
        expect(sys.path_open!(3, 0, 1000, len, 1, 0n, 0n, 0, 0)).toBe(76); // ENOTCAPABLE
      }
      const len = writeString(memory, 1000, 'a.wav');
      expect(sys.path_open!(1, 0, 1000, len, 1, 0n, 0n, 0, 0)).toBe(54); // stdout is not a directory
    });
    expect(host.files.size).toBe(0);
  });

  it('captures stdout/stderr and reports proc_exit codes', () => {
    const host = new MemoryWasi({ args: ['x'], preopenPath: '/out' });
    const result = runProgram(host, (sys, memory) => {
      const len = writeString(memory, 2000, 'Error load voice');
      memory.setUint32(3000, 2000, true);
      memory.setUint32(3004, len, true);
      sys.fd_write!(2, 3000, 1, 3100);
      sys.proc_exit!(3);
      throw new Error('not reached');
    });
    expect(result).toEqual({ exitCode: 3, stdout: '', stderr: 'Error load voice' });
  });

  it('returns exit code 0 when _start returns, and ENOSYS for unimplemented imports', () => {
    const host = new MemoryWasi({ args: ['x'], preopenPath: '/out' });
    const result = runProgram(
      host,
      (sys) => {
        expect(sys.sock_accept!(0, 0, 0)).toBe(52);
      },
      ['sock_accept'],
    );
    expect(result.exitCode).toBe(0);
  });

  it('lets traps and other errors propagate', () => {
    const host = new MemoryWasi({ args: ['x'], preopenPath: '/out' });
    expect(() =>
      runProgram(host, () => {
        throw new RangeError('unreachable');
      }),
    ).toThrow('unreachable');
  });
});
