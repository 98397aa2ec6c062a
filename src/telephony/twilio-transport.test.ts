import { once } from 'node:events';
import { createServer } from 'node:http';
import type { Socket } from 'node:net';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { type WebSocket, WebSocketServer, WebSocket as WsClient } from 'ws';
import { TwilioTransport } from './twilio-transport.js';

/**
 * The transport sends a tick's frames as one media message, and writes a tick's messages to the
 * carrier in one system call when it is given the TCP socket: observed on a real connection by
 * counting the socket's writes and reading what the client received.
 */

const closers: Array<() => void> = [];
afterEach(() => {
  for (const close of closers.splice(0)) close();
});

async function connectedPair(): Promise<{ server: WebSocket; tcp: Socket; client: WsClient }> {
  const wss = new WebSocketServer({ noServer: true });
  const http = createServer();
  const upgraded = new Promise<{ server: WebSocket; tcp: Socket }>((resolve) => {
    http.on('upgrade', (request, tcp: Socket, head) =>
      wss.handleUpgrade(request, tcp, head, (server) => resolve({ server, tcp })),
    );
  });
  http.listen(0, 'localhost');
  await once(http, 'listening');
  const port = (http.address() as { port: number }).port;
  const client = new WsClient(`ws://localhost:${port}/ws/twilio/x`);
  const { server, tcp } = await upgraded;
  await once(client, 'open');
  closers.push(() => {
    client.terminate();
    http.close();
  });
  return { server, tcp, client };
}

async function writesFor(transport: TwilioTransport, tcp: Socket, client: WsClient): Promise<number> {
  let writes = 0;
  const counted = tcp as unknown as { _write: (...a: unknown[]) => void; _writev: (...a: unknown[]) => void };
  const [write, writev] = [counted._write.bind(tcp), counted._writev.bind(tcp)];
  counted._write = (...args) => {
    writes += 1;
    write(...args);
  };
  counted._writev = (...args) => {
    writes += 1;
    writev(...args);
  };
  const received: string[] = [];
  client.on('message', (data) => received.push(data.toString()));
  // One tick of a talking call: two frames and a mark, then a frame the next tick.
  transport.sendMedia(new Uint8Array(160).fill(0xff));
  transport.sendMedia(new Uint8Array(160).fill(0xfe));
  transport.sendMark('m1');
  await new Promise((resolve) => setTimeout(resolve, 50));
  expect(received.map((m) => JSON.parse(m).event)).toEqual(['media', 'mark']);
  const audio = Buffer.from(JSON.parse(received[0]!).media.payload, 'base64');
  expect([...new Set(audio.subarray(0, 160))]).toEqual([0xff]);
  expect([...new Set(audio.subarray(160))]).toEqual([0xfe]);
  expect(audio.length).toBe(320);
  return writes;
}

describe('TwilioTransport writes', () => {
  it("sends one tick's frames as one media message, and the tick's messages in one write when it has the TCP socket", async () => {
    const { server, tcp, client } = await connectedPair();
    const transport = new TwilioTransport(server, pino({ level: 'silent' }), undefined, tcp);
    transport.streamSid = 'MZ00000000000000000000000000000000';
    expect(await writesFor(transport, tcp, client)).toBe(1);
  });

  it('without it, writes each message on its own', async () => {
    const { server, tcp, client } = await connectedPair();
    const transport = new TwilioTransport(server, pino({ level: 'silent' }));
    transport.streamSid = 'MZ00000000000000000000000000000000';
    expect(await writesFor(transport, tcp, client)).toBeGreaterThanOrEqual(2);
  });

  it('a clear drops the frames held this tick, and frames after it go out on their own', async () => {
    const { server, client } = await connectedPair();
    const transport = new TwilioTransport(server, pino({ level: 'silent' }));
    transport.streamSid = 'MZ00000000000000000000000000000000';
    const received: string[] = [];
    client.on('message', (data) => received.push(data.toString()));
    transport.sendMedia(new Uint8Array(160).fill(0xff));
    transport.sendClear();
    transport.sendMedia(new Uint8Array(160).fill(0xfe));
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(received.map((m) => JSON.parse(m).event)).toEqual(['clear', 'media']);
    expect(Buffer.from(JSON.parse(received[1]!).media.payload, 'base64')).toEqual(Buffer.alloc(160, 0xfe));
  });
});

describe('TwilioTransport reads', () => {
  it("lends each frame's bytes as Buffer.from decodes them, in one buffer, and hands marks over", async () => {
    const { server, client } = await connectedPair();
    const transport = new TwilioTransport(server, pino({ level: 'silent' }));
    const frames: Array<{ copy: Buffer; lent: Uint8Array }> = [];
    const marks: string[] = [];
    transport.attach({
      onStart() {},
      onAudio(mulaw) {
        frames.push({ copy: Buffer.from(mulaw), lent: mulaw });
      },
      onDtmf() {},
      onMark(name) {
        marks.push(name);
      },
      onEnd() {},
    });
    const sid = 'MZ00000000000000000000000000000000';
    client.send(JSON.stringify({ event: 'start', streamSid: sid, start: { streamSid: sid, callSid: 'CA1' } }));
    const payloads = [
      Buffer.alloc(160, 0x11).toString('base64'),
      // Longer than a frame (the buffer grows), then odd ones: stray characters, padding mid-way.
      Buffer.alloc(480, 0x22).toString('base64'),
      `${Buffer.alloc(159, 0x33).toString('base64')}\n`,
      'QUJD==QUJD',
      '',
      Buffer.alloc(160, 0x44).toString('base64'),
    ];
    for (const payload of payloads) client.send(JSON.stringify({ event: 'media', streamSid: sid, media: { payload } }));
    client.send(JSON.stringify({ event: 'mark', streamSid: sid, mark: { name: 'g1-m5' } }));
    client.send(JSON.stringify({ event: 'mark', streamSid: sid, mark: { name: 7 } }));
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(frames.map((f) => f.copy)).toEqual(payloads.map((p) => Buffer.from(p, 'base64')));
    expect(marks).toEqual(['g1-m5']);
    // Lent, not given: the first frame's bytes were overwritten by the later ones.
    expect(Buffer.from(frames[5]!.lent)).toEqual(Buffer.alloc(160, 0x44));
    expect(frames[5]!.lent.buffer).toBe(frames[2]!.lent.buffer);
  });

  it("hands each frame's timestamp over as Number() reads it, and drops other streams and tracks, on both paths", async () => {
    const { server, client } = await connectedPair();
    const transport = new TwilioTransport(server, pino({ level: 'silent' }));
    const heard: Array<number | undefined> = [];
    transport.attach({
      onStart() {},
      onAudio(_mulaw, timestampMs) {
        heard.push(timestampMs);
      },
      onDtmf() {},
      onMark() {},
      onEnd() {},
    });
    const sid = 'MZ00000000000000000000000000000001';
    client.send(JSON.stringify({ event: 'start', streamSid: sid, start: { streamSid: sid, callSid: 'CA1' } }));
    const payload = Buffer.alloc(160, 0x55).toString('base64');
    // The carrier's shape (read from the bytes), then the same with an escape in the track (parsed).
    const shapes = [
      (media: Record<string, unknown>, streamSid = sid) => JSON.stringify({ event: 'media', streamSid, media }),
      (media: Record<string, unknown>, streamSid = sid) =>
        JSON.stringify({ event: 'media', streamSid, media }).replace('"inbound"', '"\\u0069nbound"'),
    ];
    for (const shape of shapes) {
      for (const timestamp of ['5', '00012', '', '1e3', 'x', '1234567890123456789', undefined])
        client.send(shape({ track: 'inbound', payload, ...(timestamp === undefined ? {} : { timestamp }) }));
      client.send(shape({ track: 'inbound', payload, timestamp: '7' }, 'MZother'));
      client.send(shape({ track: 'outbound', payload, timestamp: '8' }));
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
    const once = [5, 12, 0, 1000, undefined, Number('1234567890123456789'), undefined];
    expect(heard).toEqual([...once, ...once]);
  });
});
