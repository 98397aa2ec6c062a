import { randomUUID } from 'node:crypto';
import { ProtobufFrameSerializer } from '@pipecat-ai/websocket-transport';
import WebSocket from 'ws';
import { Frame } from '../../src/rooms/pipecat-frames.js';
import type { RoomMessage } from './room-client.js';

type RtviMessage = Parameters<ProtobufFrameSerializer['serializeMessage']>[0];

/**
 * A room participant speaking the Pipecat websocket transport's wire, as the SDK does in a
 * browser: no subprotocol, the token in the URL, every message a protobuf frame made by the
 * transport's own serializer (client-ready first, then microphone audio frames in real time).
 * Records the RTVI messages and the bot audio it receives.
 */
export class PipecatWsClient {
  readonly messages: RoomMessage[] = [];
  /** Bot audio received, samples, and the rates and channel counts its frames declared. */
  audioSamples = 0;
  readonly audioFormats = new Set<string>();
  closed: { code: number; reason: string } | undefined;
  /** Frames the transport's deserializer refused (the SDK would log and drop them). */
  readonly unreadable: string[] = [];
  private readonly serializer = new ProtobufFrameSerializer();
  private readonly socket: WebSocket;
  private readonly waiters: Array<() => void> = [];

  private constructor(url: string) {
    this.socket = new WebSocket(url);
    this.socket.on('message', (data: Buffer) => void this.onFrame(data));
    this.socket.on('close', (code, reason) => {
      this.closed = { code, reason: reason.toString() };
      this.wake();
    });
    this.socket.on('error', () => undefined);
  }

  static async connect(wsUrl: string, options: { ready?: boolean } = {}): Promise<PipecatWsClient> {
    const client = new PipecatWsClient(wsUrl);
    await new Promise<void>((resolve) => {
      client.socket.once('open', () => resolve());
      client.socket.once('close', () => resolve());
    });
    if (options.ready !== false && !client.closed) {
      client.sendRtvi('client-ready', {
        version: '2.1.0',
        about: { library: '@pipecat-ai/client-js', library_version: '1.13.1' },
      });
    }
    return client;
  }

  /** An RTVI message in a message frame, as the SDK's transport sends it; returns its id. */
  sendRtvi(type: string, data: unknown = {}): string {
    const id = randomUUID().slice(0, 8);
    this.socket.send(this.serializer.serializeMessage({ id, label: 'rtvi-ai', type, data } as RtviMessage));
    return id;
  }

  sendRaw(data: string | Uint8Array): void {
    this.socket.send(data);
  }

  /** Sends `pcm` (interleaved when `channels` is 2) as 20 ms audio frames paced by the wall clock. */
  async stream(pcm: Int16Array, rateHz: number, channels = 1): Promise<void> {
    const frame = (rateHz / 50) * channels;
    const startMs = performance.now();
    for (let i = 0, n = 0; i < pcm.length; i += frame, n++) {
      const waitMs = startMs + n * 20 - performance.now();
      if (waitMs > 0) await new Promise((r) => setTimeout(r, waitMs));
      if (this.socket.readyState !== WebSocket.OPEN) return;
      const chunk = pcm.slice(i, Math.min(i + frame, pcm.length));
      this.socket.send(this.serializer.serializeAudio(chunk.buffer, rateHz, channels));
    }
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

  private async onFrame(data: Buffer): Promise<void> {
    // The transport's own deserializer reads what the SDK would; the frame's declared format is
    // read beside it (the SDK ignores it and plays at its player rate).
    let parsed: Awaited<ReturnType<ProtobufFrameSerializer['deserialize']>>;
    try {
      parsed = await this.serializer.deserialize(new Blob([new Uint8Array(data)]));
    } catch (err) {
      this.unreadable.push((err as Error).message);
      return;
    }
    if (parsed.type === 'audio') {
      this.audioSamples += parsed.audio.length;
      const frame = Frame.fromBinary(data).frame;
      if (frame.oneofKind === 'audio') this.audioFormats.add(`${frame.audio.sampleRate}/${frame.audio.numChannels}`);
    } else {
      this.messages.push(parsed.message as unknown as RoomMessage);
    }
    this.wake();
  }

  private wake(): void {
    for (const waiter of this.waiters.splice(0)) waiter();
  }
}
