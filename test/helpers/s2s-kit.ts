import { type AddressInfo, type Server, type Socket, createServer } from 'node:net';
import type { S2sEvents } from '../../src/providers/s2s/types.js';
import type { ProviderError } from '../../src/providers/types.js';
import { toneAudio } from '../../src/emulators/emulator-kit.js';

/** What a speech-to-speech session reported, in order, and a way to await a report. */
export class RecordedS2sEvents implements S2sEvents {
  readonly audio = new Map<string, number>();
  readonly itemsDone: string[] = [];
  readonly botTranscripts: Array<{ itemId: string; text: string }> = [];
  readonly userTranscripts: string[] = [];
  readonly errors: ProviderError[] = [];
  speechStarts = 0;
  /** Called inside onSpeechStarted, as a call session barges in: before any later event. */
  bargeIn: (() => void) | undefined;
  private waiters: Array<{ check: () => boolean; resolve: () => void }> = [];

  onAudio(itemId: string, mulaw: Uint8Array): void {
    this.audio.set(itemId, (this.audio.get(itemId) ?? 0) + mulaw.length);
    this.changed();
  }

  onItemDone(itemId: string): void {
    this.itemsDone.push(itemId);
    this.changed();
  }

  onSpeechStarted(): void {
    this.speechStarts += 1;
    this.bargeIn?.();
    this.changed();
  }

  onUserTranscript(text: string): void {
    this.userTranscripts.push(text);
    this.changed();
  }

  onBotTranscript(itemId: string, text: string): void {
    this.botTranscripts.push({ itemId, text });
    this.changed();
  }

  onError(error: ProviderError): void {
    this.errors.push(error);
    this.changed();
  }

  /** Resolves once `check` holds (checked at every event); the test's own timeout bounds the wait. */
  until(check: () => boolean): Promise<void> {
    if (check()) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push({ check, resolve }));
  }

  private changed(): void {
    this.waiters = this.waiters.filter((waiter) => {
      if (!waiter.check()) return true;
      waiter.resolve();
      return false;
    });
  }
}

/** 20 ms phone frames (8 kHz mu-law): the emulators' tone, which they hear as speech. */
export function speechFrames(ms: number): Uint8Array[] {
  const frames: Uint8Array[] = [];
  for (let at = 0; at < ms; at += 20) frames.push(toneAudio({ encoding: 'mulaw', sampleRateHz: 8000 }, at * 8, 160));
  return frames;
}

/** 20 ms phone frames of silence. */
export function silenceFrames(ms: number): Uint8Array[] {
  return Array.from({ length: Math.ceil(ms / 20) }, () => new Uint8Array(160).fill(0xff));
}

/** A server that accepts connections and never answers: a vendor that hangs. Its url names `localhost`. */
export function startSilentServer(): Promise<RawServer> {
  return startRawServer(() => undefined);
}

/**
 * A server that refuses every websocket upgrade with `status` and a JSON error body whose end never
 * comes: a vendor (or a proxy) that stalls mid-answer.
 */
export function startStallingRefusal(status: number, bodyStart: string): Promise<RawServer> {
  return startRawServer((socket) => {
    socket.once('data', () => {
      socket.write(`HTTP/1.1 ${status} Refused\r\ncontent-type: application/json\r\ncontent-length: 100000\r\n\r\n${bodyStart}`);
    });
  });
}

export interface RawServer {
  /** http://localhost:<port> */
  url: string;
  close(): Promise<void>;
}

async function startRawServer(onSocket: (socket: Socket) => void): Promise<RawServer> {
  const sockets = new Set<Socket>();
  const server: Server = createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => undefined);
    onSocket(socket);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://localhost:${port}`,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
