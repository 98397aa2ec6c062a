import { createSocket, type RemoteInfo, type Socket } from 'node:dgram';

/**
 * A lossy, jittery UDP path between a browser and the server, for WebRTC media: the browser is
 * told (in the SDP answer) to send to the relay, which passes every datagram on to the server's
 * candidate and the server's replies back, dropping `lossRate` of them in each direction and
 * delaying each by a random 0..`jitterMs` (so packets also arrive out of order). The randomness is
 * seeded: a run is reproducible.
 */
export interface ImpairedLink {
  /** The answer with the server's candidates replaced by the relay's (same address, the relay's port). */
  rewriteAnswer(sdp: string): string;
  readonly stats: { toServer: number; toBrowser: number; dropped: number };
  close(): Promise<void>;
}

const CANDIDATE = /^a=candidate:(\S+) (\d+) udp (\d+) (\d{1,3}(?:\.\d{1,3}){3}) (\d+) typ host/i;

export async function startImpairedLink(options: {
  lossRate: number;
  jitterMs: number;
  seed?: number;
}): Promise<ImpairedLink> {
  let state = options.seed ?? 20261126;
  const random = (): number => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return state / 0x100000000;
  };
  const bind = (socket: Socket): Promise<number> =>
    new Promise((resolve) => socket.bind(0, '0.0.0.0', () => resolve(socket.address().port)));
  const facingBrowser = createSocket('udp4');
  const facingServer = createSocket('udp4');
  const browserPort = await bind(facingBrowser);
  await bind(facingServer);
  const stats = { toServer: 0, toBrowser: 0, dropped: 0 };
  let server: { address: string; port: number } | undefined;
  let browser: RemoteInfo | undefined;
  const timers = new Set<NodeJS.Timeout>();
  let closed = false;

  const pass = (
    socket: Socket,
    data: Buffer,
    to: { address: string; port: number },
    counter: 'toServer' | 'toBrowser',
  ) => {
    if (random() < options.lossRate) {
      stats.dropped += 1;
      return;
    }
    const timer = setTimeout(() => {
      timers.delete(timer);
      if (closed) return;
      stats[counter] += 1;
      socket.send(data, to.port, to.address);
    }, random() * options.jitterMs);
    timers.add(timer);
  };
  facingBrowser.on('message', (data, from) => {
    browser = from;
    if (server) pass(facingServer, data, server, 'toServer');
  });
  facingServer.on('message', (data) => {
    if (browser) pass(facingBrowser, data, browser, 'toBrowser');
  });

  return {
    stats,
    rewriteAnswer(sdp) {
      const lines = sdp.split('\r\n');
      const hosts = lines.map((line) => CANDIDATE.exec(line)).filter((m): m is RegExpExecArray => m !== null);
      const target = hosts.find((m) => !m[4]!.startsWith('127.')) ?? hosts[0];
      if (!target) throw new Error('the answer has no UDP host candidate');
      server = { address: target[4]!, port: Number(target[5]) };
      const out: string[] = [];
      let added = false;
      for (const line of lines) {
        if (!line.startsWith('a=candidate:')) out.push(line);
        else if (!added) {
          added = true;
          out.push(`a=candidate:${target[1]} 1 udp ${target[3]} ${server.address} ${browserPort} typ host`);
        }
      }
      return out.join('\r\n');
    },
    async close() {
      closed = true;
      for (const timer of timers) clearTimeout(timer);
      await Promise.all([
        new Promise<void>((resolve) => facingBrowser.close(() => resolve())),
        new Promise<void>((resolve) => facingServer.close(() => resolve())),
      ]);
    },
  };
}
