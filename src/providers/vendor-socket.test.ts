import { once } from 'node:events';
import { createServer, type IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import WebSocket, { WebSocketServer } from 'ws';
import { openVendorSocket, vendorSocketOptions } from './vendor-socket.js';

/**
 * What a vendor receives from a vendor socket, read off the wire: masked frames (as RFC 6455
 * requires of a client); inside TLS the key is zero, so the message travels as written, and the
 * vendor's server (here ws's own) reads it as any other; over plain `ws:` the key is random.
 */

const closers: Array<() => void> = [];
afterEach(() => {
  for (const close of closers.splice(0)) close();
});

/** A server that records the raw bytes it receives and the first message ws reads from them. */
async function recordingServer(): Promise<{ url: string; raw: Buffer[]; received: Promise<string> }> {
  const wss = new WebSocketServer({ noServer: true });
  const http = createServer();
  const raw: Buffer[] = [];
  const received = new Promise<string>((resolve) => {
    http.on('upgrade', (request: IncomingMessage, tcp: Socket, head: Buffer) =>
      wss.handleUpgrade(request, tcp, head, (server) => {
        // Copied before ws reads it: ws unmasks a frame in place.
        tcp.prependListener('data', (chunk: Buffer) => raw.push(Buffer.from(chunk)));
        server.on('message', (data) => resolve(data.toString()));
      }),
    );
  });
  http.listen(0, 'localhost');
  await once(http, 'listening');
  closers.push(() => http.close());
  return { url: `ws://localhost:${(http.address() as { port: number }).port}/v1`, raw, received };
}

const MESSAGE = JSON.stringify({ type: 'input_audio_buffer.append', audio: 'f39/fw==' });

async function sendOne(ws: WebSocket, server: Awaited<ReturnType<typeof recordingServer>>): Promise<Buffer> {
  closers.push(() => ws.terminate());
  await once(ws, 'open');
  ws.send(MESSAGE);
  expect(await server.received).toBe(MESSAGE);
  const frame = Buffer.concat(server.raw);
  expect(frame[0]).toBe(0x81); // FIN, text
  expect(frame[1]! & 0x80).toBe(0x80); // masked
  expect(frame[1]! & 0x7f).toBe(MESSAGE.length);
  return frame;
}

describe('vendor sockets', () => {
  it('inside TLS, mask frames with a zero key, which the vendor reads as sent', async () => {
    const server = await recordingServer();
    // The options a wss: vendor gets, on a plain connection so the test can read the frame.
    const options = vendorSocketOptions('wss://api.openai.com/v1/realtime', { timeoutMs: 5000 });
    const frame = await sendOne(new WebSocket(server.url, options), server);
    expect([...frame.subarray(2, 6)]).toEqual([0, 0, 0, 0]);
    expect(frame.subarray(6).toString()).toBe(MESSAGE);
  });

  it('over plain ws:, keep random keys', async () => {
    expect(vendorSocketOptions('ws://stt.internal:8080/v1', { timeoutMs: 5000 }).generateMask).toBeUndefined();
    const server = await recordingServer();
    const frame = await sendOne(openVendorSocket(server.url, { timeoutMs: 5000 }), server);
    expect(frame.subarray(6).toString()).not.toBe(MESSAGE);
  });
});
