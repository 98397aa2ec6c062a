import { once } from 'node:events';
import { createServer, type IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { WebSocketServer } from 'ws';
import { openVendorSocket } from './vendor-socket.js';

/**
 * What a vendor receives from openVendorSocket, read off the wire: masked frames (as RFC 6455
 * requires of a client) whose key is zero, so the message travels as written, and which the
 * vendor's server (here ws's own) reads as any other.
 */

const closers: Array<() => void> = [];
afterEach(() => {
  for (const close of closers.splice(0)) close();
});

describe('openVendorSocket', () => {
  it('sends masked frames with a zero key, which the vendor reads as sent', async () => {
    const wss = new WebSocketServer({ noServer: true });
    const http = createServer();
    const raw: Buffer[] = [];
    const received = new Promise<string>((resolve) => {
      http.on('upgrade', (request: IncomingMessage, tcp: Socket, head: Buffer) =>
        wss.handleUpgrade(request, tcp, head, (server) => {
          tcp.on('data', (chunk: Buffer) => raw.push(chunk));
          server.on('message', (data) => resolve(data.toString()));
        }),
      );
    });
    http.listen(0, 'localhost');
    await once(http, 'listening');
    const port = (http.address() as { port: number }).port;
    const ws = openVendorSocket(`ws://localhost:${port}/v1`, { timeoutMs: 5000 });
    closers.push(() => {
      ws.terminate();
      http.close();
    });
    await once(ws, 'open');
    const message = JSON.stringify({ type: 'input_audio_buffer.append', audio: 'f39/fw==' });
    ws.send(message);
    expect(await received).toBe(message);

    const frame = Buffer.concat(raw);
    expect(frame[0]).toBe(0x81); // FIN, text
    expect(frame[1]! & 0x80).toBe(0x80); // masked
    expect(frame[1]! & 0x7f).toBe(message.length);
    expect([...frame.subarray(2, 6)]).toEqual([0, 0, 0, 0]);
    expect(frame.subarray(6).toString()).toBe(message);
  });
});
