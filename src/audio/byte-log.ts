/**
 * An append-only run of bytes that doubles its capacity when it must, so appending a frame costs
 * no allocation: a recording's track, the audio a tick or a vendor message gathers. The bytes are
 * copied in (a frame is usually lent only for the call that hands it over); `view()` lends them
 * back until the next append or `clear()`.
 */
export class ByteLog {
  private bytes: Buffer;
  private lengthValue = 0;

  constructor(initialBytes: number) {
    this.bytes = Buffer.alloc(initialBytes);
  }

  get length(): number {
    return this.lengthValue;
  }

  /** Appends the first `count` bytes of `data` (all of them by default). */
  append(data: Uint8Array, count = data.length): void {
    if (this.lengthValue + count > this.bytes.length) {
      const grown = Buffer.alloc(Math.max(this.bytes.length * 2, this.lengthValue + count));
      grown.set(this.bytes.subarray(0, this.lengthValue));
      this.bytes = grown;
    }
    this.bytes.set(count === data.length ? data : data.subarray(0, count), this.lengthValue);
    this.lengthValue += count;
  }

  /** The bytes appended so far, as a view on the log's own buffer. */
  view(): Buffer {
    return this.bytes.subarray(0, this.lengthValue);
  }

  /** Forgets the bytes; the capacity stays. */
  clear(): void {
    this.lengthValue = 0;
  }
}
