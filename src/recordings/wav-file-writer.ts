import { type FileHandle, open } from 'node:fs/promises';
import { PRIVATE_FILE_MODE } from '../shared/private-files.js';

/** Canonical PCM header: RIFF + fmt (16 bytes) + data chunk header. */
export const WAV_HEADER_BYTES = 44;
const BYTES_PER_SAMPLE = 2;
/**
 * Sizes written while a file is still growing. Readers that honour the header then read to the
 * end of the file; the real sizes replace it when the recording finishes (or at recovery).
 */
const STREAMING_SIZE = 0xffffffff;

/** The 44-byte header of a mono 16-bit PCM WAV holding `dataBytes` of samples. */
export function pcm16WavHeader(sampleRateHz: number, dataBytes: number): Buffer {
  const header = Buffer.alloc(WAV_HEADER_BYTES);
  header.write('RIFF', 0, 'ascii');
  header.writeUInt32LE(dataBytes === STREAMING_SIZE ? STREAMING_SIZE : 36 + dataBytes, 4);
  header.write('WAVE', 8, 'ascii');
  header.write('fmt ', 12, 'ascii');
  header.writeUInt32LE(16, 16);
  header.writeUInt16LE(1, 20); // PCM
  header.writeUInt16LE(1, 22); // mono
  header.writeUInt32LE(sampleRateHz, 24);
  header.writeUInt32LE(sampleRateHz * BYTES_PER_SAMPLE, 28);
  header.writeUInt16LE(BYTES_PER_SAMPLE, 32);
  header.writeUInt16LE(16, 34);
  header.write('data', 36, 'ascii');
  header.writeUInt32LE(dataBytes, 40);
  return header;
}

/**
 * A mono 16-bit WAV written as it grows: appends are queued and written with async fs in order,
 * so the caller never waits on the disk. The header carries placeholder sizes until `finish`,
 * and `repairWavFile` fixes them if the process dies first.
 */
export class WavFileWriter {
  private handle: FileHandle | undefined;
  private dataBytes = 0;
  /** Every write runs after the previous one; errors are kept, not thrown at the caller. */
  private chain: Promise<void>;
  private failure: Error | undefined;

  constructor(
    readonly path: string,
    readonly sampleRateHz: number,
  ) {
    this.chain = (async () => {
      // Callers' voices: readable by the service's user only.
      this.handle = await open(path, 'w', PRIVATE_FILE_MODE);
      await this.handle.write(pcm16WavHeader(sampleRateHz, STREAMING_SIZE), 0, WAV_HEADER_BYTES, 0);
    })().catch((err: unknown) => this.fail(err));
  }

  /** Samples written so far, counting queued appends. */
  get sampleCount(): number {
    return this.dataBytes / BYTES_PER_SAMPLE;
  }

  get error(): Error | undefined {
    return this.failure;
  }

  /** Queues `samples` after everything appended before. The array must not be reused by the caller. */
  append(samples: Int16Array): void {
    if (samples.length === 0 || this.failure) return;
    const bytes = Buffer.from(samples.buffer, samples.byteOffset, samples.byteLength);
    const position = WAV_HEADER_BYTES + this.dataBytes;
    this.dataBytes += bytes.length;
    this.chain = this.chain
      .then(async () => {
        if (this.failure || !this.handle) return;
        await this.handle.write(bytes, 0, bytes.length, position);
      })
      .catch((err: unknown) => this.fail(err));
  }

  /** Resolves once every queued append is on its way to the disk. */
  async settled(): Promise<void> {
    await this.chain;
  }

  /** Writes the real sizes into the header, syncs and closes. Returns the data size in bytes. */
  async finish(): Promise<number> {
    await this.chain;
    const handle = this.handle;
    this.handle = undefined;
    if (!handle) return this.dataBytes;
    try {
      if (!this.failure) {
        await handle.write(pcm16WavHeader(this.sampleRateHz, this.dataBytes), 0, WAV_HEADER_BYTES, 0);
        await handle.datasync();
      }
    } catch (err) {
      this.fail(err);
    } finally {
      await handle.close().catch(() => undefined);
    }
    if (this.failure) throw this.failure;
    return this.dataBytes;
  }

  private fail(err: unknown): void {
    this.failure ??= err instanceof Error ? err : new Error(String(err));
  }
}

/**
 * Makes a WAV this module wrote playable after the process died mid-write: drops a torn last
 * sample, writes the true sizes into the header. Returns the number of samples it holds.
 */
export async function repairWavFile(path: string, sampleRateHz: number): Promise<number> {
  const handle = await open(path, 'r+');
  try {
    const { size } = await handle.stat();
    let dataBytes = Math.max(0, size - WAV_HEADER_BYTES);
    dataBytes -= dataBytes % BYTES_PER_SAMPLE;
    await handle.truncate(WAV_HEADER_BYTES + dataBytes);
    await handle.write(pcm16WavHeader(sampleRateHz, dataBytes), 0, WAV_HEADER_BYTES, 0);
    await handle.datasync();
    return dataBytes / BYTES_PER_SAMPLE;
  } finally {
    await handle.close();
  }
}
