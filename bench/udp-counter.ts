import { createSocket, type RemoteInfo, type Socket } from 'node:dgram';

/**
 * A UDP relay that passes every datagram between one WebRTC client and the server unchanged and
 * counts them: the media bytes each way as they cross the wire (UDP payloads: RTP, RTCP, DTLS,
 * SCTP and STUN alike), for the benchmark's bandwidth per participant. The client is told (in the
 * SDP answer) to send to the relay instead of the server.
 */
export interface CountingRelay {
  /** The answer with the server's candidates replaced by the relay's. */
  rewriteAnswer(sdp: string): string;
  readonly counts: { toServerBytes: number; toServerPackets: number; toClientBytes: number; toClientPackets: number };
  close(): Promise<void>;
}

const CANDIDATE = /^a=candidate:(\S+) (\d+) udp (\d+) (\d{1,3}(?:\.\d{1,3}){3}) (\d+) typ host/i;

export async function startCountingRelay(): Promise<CountingRelay> {
  const bind = (socket: Socket): Promise<number> =>
    new Promise((resolve) => socket.bind(0, '127.0.0.1', () => resolve(socket.address().port)));
  const facingClient = createSocket('udp4');
  const facingServer = createSocket('udp4');
  const clientPort = await bind(facingClient);
  await bind(facingServer);
  const counts = { toServerBytes: 0, toServerPackets: 0, toClientBytes: 0, toClientPackets: 0 };
  let server: { address: string; port: number } | undefined;
  let client: RemoteInfo | undefined;
  facingClient.on('message', (data, from) => {
    client = from;
    if (!server) return;
    counts.toServerBytes += data.byteLength;
    counts.toServerPackets += 1;
    facingServer.send(data, server.port, server.address);
  });
  facingServer.on('message', (data) => {
    if (!client) return;
    counts.toClientBytes += data.byteLength;
    counts.toClientPackets += 1;
    facingClient.send(data, client.port, client.address);
  });
  return {
    counts,
    rewriteAnswer(sdp) {
      const lines = sdp.split('\r\n');
      const target = lines.map((line) => CANDIDATE.exec(line)).find((m): m is RegExpExecArray => m !== null);
      if (!target) throw new Error('the answer has no UDP host candidate');
      server = { address: target[4]!, port: Number(target[5]) };
      const out: string[] = [];
      let added = false;
      for (const line of lines) {
        if (!line.startsWith('a=candidate:')) out.push(line);
        else if (!added) {
          added = true;
          out.push(`a=candidate:${target[1]} 1 udp ${target[3]} 127.0.0.1 ${clientPort} typ host`);
        }
      }
      return out.join('\r\n');
    },
    async close() {
      await Promise.all([
        new Promise<void>((resolve) => facingClient.close(() => resolve())),
        new Promise<void>((resolve) => facingServer.close(() => resolve())),
      ]);
    },
  };
}
