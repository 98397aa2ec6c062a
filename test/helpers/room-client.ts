import { readFileSync } from 'node:fs';
import { type Clock, REAL_CLOCK } from '../../src/shared/clock.js';
import { fileURLToPath } from 'node:url';
import WebSocket from 'ws';
import { resample } from '../../src/audio/resample.js';
import { parseWav } from '../../src/audio/wav.js';

/** A fixture WAV (8 kHz) as a browser would capture it: 16-bit PCM at `rateHz`. */
export function fixturePcm(name: string, rateHz: number): Int16Array {
  const wav = parseWav(readFileSync(fileURLToPath(new URL(`../../fixtures/audio/${name}`, import.meta.url))));
  return resample(wav.samples, wav.sampleRateHz, rateHz);
}

export interface RoomMessage {
  label: string;
  type: string;
  data?: Record<string, any>;
}

/**
 * A room participant over a real websocket, speaking the room protocol the way the web client
 * does: client-ready, then 20 ms binary PCM frames in real time. Records everything it receives.
 */
export class RoomClient {
  readonly messages: RoomMessage[] = [];
  /** Bot audio received, bytes. */
  audioBytes = 0;
  closed: { code: number; reason: string } | undefined;
  private readonly socket: WebSocket;
  private readonly waiters: Array<() => void> = [];

  private constructor(
    url: string,
    protocols: string[],
    readonly rateHz: number,
    /** The microphone's clock: the room's, when the server runs on a scaled one (shared/clock.ts). */
    private readonly clock: Clock,
  ) {
    this.socket = new WebSocket(url, protocols);
    this.socket.on('message', (data, isBinary) => {
      if (isBinary) this.audioBytes += (data as Buffer).length;
      else this.messages.push(JSON.parse(data.toString()) as RoomMessage);
      this.wake();
    });
    this.socket.on('close', (code, reason) => {
      this.closed = { code, reason: reason.toString() };
      this.wake();
    });
    this.socket.on('error', () => undefined);
  }

  /** Opens the socket; `token` goes as a subprotocol, as the page sends it, unless `viaQuery`. */
  static async connect(
    wsUrl: string,
    token: string | undefined,
    options: { rateHz?: number; viaQuery?: boolean; ready?: boolean; clock?: Clock } = {},
  ): Promise<RoomClient> {
    const url = options.viaQuery && token ? `${wsUrl}?token=${encodeURIComponent(token)}` : wsUrl;
    const protocols = !options.viaQuery && token ? ['rtvi-ai', token] : ['rtvi-ai'];
    const client = new RoomClient(url, protocols, options.rateHz ?? 16000, options.clock ?? REAL_CLOCK);
    await new Promise<void>((resolve) => {
      client.socket.once('open', () => resolve());
      client.socket.once('close', () => resolve());
    });
    if (options.ready !== false && !client.closed)
      client.sendJson({ label: 'rtvi-ai', type: 'client-ready', data: { audio: { sampleRateHz: client.rateHz } } });
    return client;
  }

  sendJson(message: unknown): void {
    this.socket.send(JSON.stringify(message));
  }

  sendRaw(data: string | Buffer): void {
    this.socket.send(data);
  }

  /** Sends `pcm` as 20 ms frames paced by the client's clock, as a microphone would. */
  async stream(pcm: Int16Array): Promise<void> {
    const frame = this.rateHz / 50;
    const startMs = this.clock.now();
    for (let i = 0, n = 0; i < pcm.length; i += frame, n++) {
      const waitMs = startMs + n * 20 - this.clock.now();
      if (waitMs > 0) await this.clock.sleep(waitMs);
      if (this.socket.readyState !== WebSocket.OPEN) return;
      const chunk = pcm.subarray(i, Math.min(i + frame, pcm.length));
      this.socket.send(Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength));
    }
  }

  silence(ms: number): Int16Array {
    return new Int16Array((this.rateHz * ms) / 1000);
  }

  of(type: string): RoomMessage[] {
    return this.messages.filter((m) => m.type === type);
  }

  /** Resolves when `predicate` holds, or rejects after `timeoutMs` naming what was awaited. */
  async until(what: string, predicate: () => boolean, timeoutMs = 15_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!predicate()) {
      const left = deadline - Date.now();
      if (left <= 0)
        throw new Error(
          `timed out waiting for ${what}; got ${this.messages.map((m) => m.type).join(', ')}; closed ${JSON.stringify(this.closed)}`,
        );
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, Math.min(left, 200));
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  async untilClosed(timeoutMs = 5000): Promise<{ code: number; reason: string }> {
    await this.until('close', () => this.closed !== undefined, timeoutMs);
    return this.closed!;
  }

  close(): void {
    this.socket.close(1000, 'test done');
  }

  private wake(): void {
    for (const waiter of this.waiters.splice(0)) waiter();
  }
}
