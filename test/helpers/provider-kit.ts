import { type AddressInfo, type Server, type Socket, createServer } from 'node:net';
import { pino } from 'pino';
import { expect } from 'vitest';
import {
  type LlmDelta,
  type LlmProvider,
  type LlmRequest,
  type ProviderContext,
  ProviderError,
  type TtsOutput,
  type TtsProvider,
} from '../../src/providers/types.js';

/**
 * What every provider adapter test needs besides its vendor's emulator: a call context, text
 * sources for TTS, collectors of what a provider streams, and a wait helper.
 */

export const silentLog = pino({ level: 'silent' });

export function context(signal = new AbortController().signal): ProviderContext {
  return { signal, log: silentLog };
}

/** A finished text source: the LLM already said all of it. */
export async function* pieces(...texts: string[]): AsyncGenerator<string> {
  for (const text of texts) yield text;
}

/** A text source the test feeds by hand, like an LLM that is still talking. */
export class TextFeed implements AsyncIterable<string> {
  private queue: string[] = [];
  private ended = false;
  private error: unknown;
  private wake: (() => void) | undefined;

  push(text: string): void {
    this.queue.push(text);
    this.wake?.();
  }

  end(): void {
    this.ended = true;
    this.wake?.();
  }

  fail(error: unknown): void {
    this.error = error;
    this.ended = true;
    this.wake?.();
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<string> {
    for (;;) {
      if (this.queue.length > 0) {
        yield this.queue.shift()!;
        continue;
      }
      if (this.error) throw this.error;
      if (this.ended) return;
      await new Promise<void>((resolve) => {
        this.wake = resolve;
      });
    }
  }
}

/** Everything a TTS yields for one reply. */
export async function collectSpeech(
  tts: TtsProvider,
  text: AsyncIterable<string>,
  ctx = context(),
): Promise<TtsOutput[]> {
  const out: TtsOutput[] = [];
  for await (const item of tts.synthesize(text, ctx)) out.push(item);
  return out;
}

export function audioBytes(outputs: TtsOutput[]): number {
  return outputs.reduce((n, o) => n + (o.type === 'audio' ? o.audio.length : 0), 0);
}

export function spoken(outputs: TtsOutput[]): string[] {
  return outputs.flatMap((o) => (o.type === 'spoken' ? [o.text] : []));
}

/** Everything an LLM streams for one request. */
export async function collectDeltas(llm: LlmProvider, request: LlmRequest, ctx = context()): Promise<LlmDelta[]> {
  const out: LlmDelta[] = [];
  for await (const delta of llm.complete(request, ctx)) out.push(delta);
  return out;
}

export function textOf(deltas: LlmDelta[]): string {
  return deltas.map((d) => (d.type === 'text' ? d.text : '')).join('');
}

/** The ProviderError a run rejects with; fails the test if it resolves or rejects otherwise. */
export async function providerFailure(run: Promise<unknown>): Promise<ProviderError> {
  const err = await run.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ProviderError);
  return err as ProviderError;
}

export async function until(condition: () => boolean, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/**
 * The environment of provider tests: the emulators listen on 127.0.0.1, so the operator's switch
 * lets a bot's base_url reach loopback, as a server with self-hosted model servers would set it.
 */
export const EMULATOR_ENV = { SWITCHBOARD_PROVIDER_ALLOW_PRIVATE: 'true' } as const;

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
      socket.write(
        `HTTP/1.1 ${status} Refused\r\ncontent-type: application/json\r\ncontent-length: 100000\r\n\r\n${bodyStart}`,
      );
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
