/**
 * The server's ICE candidates as the browser sees them. Behind a 1:1 NAT (a cloud VM with a
 * public address mapped to its private one) the server's sockets are bound to the private address,
 * which the browser cannot reach. The answer then also offers each host candidate at the public
 * address with the same port (the NAT maps the port unchanged), as SFUs do with an "announced"
 * address; the browser tries both and keeps the one that answers.
 */

const HOST_CANDIDATE = /^a=candidate:(\S+) (\d+) (udp) (\d+) (\d{1,3}(?:\.\d{1,3}){3}) (\d+) typ host(.*)$/i;

export function announcePublicIp(sdp: string, publicIp: string): string {
  const lines = sdp.split('\r\n');
  const out: string[] = [];
  for (const line of lines) {
    out.push(line);
    const match = HOST_CANDIDATE.exec(line);
    if (!match) continue;
    const [, foundation, component, transport, priority, address, port] = match;
    if (address === publicIp || address!.startsWith('127.')) continue;
    // A distinct foundation (the address differs) and a slightly lower priority than the host's.
    out.push(
      `a=candidate:${foundation}p ${component} ${transport} ${Number(priority) - 1} ${publicIp} ${port} typ host`,
    );
  }
  return out.join('\r\n');
}
