/**
 * A load balancer for tests: one address in front of several nodes, handing each HTTP request and
 * each websocket upgrade to the next node in turn. Like a real balancer with active health
 * checks, it skips a node whose /healthz does not answer 200 (draining, or dead). `pinNext` sends
 * the next connection to a given node, and `pinPaths` every request under a path, so a test can
 * say which node the carrier reaches.
 */
import { type IncomingMessage, type Server, createServer, request as httpRequest } from 'node:http';
import { type AddressInfo, type Socket, connect } from 'node:net';

export interface RoundRobinProxy {
  /** http://localhost:port */
  url: string;
  port: number;
  /** The next request or upgrade goes to this backend (by index), healthy or not. */
  pinNext(index: number): void;
  /** Every request and upgrade whose path starts with `prefix` goes to this backend (by index), from now on. */
  pinPaths(prefix: string, index: number): void;
  /** Which backend (index) each request and upgrade went to, in order: `GET /healthz` probes are not listed. */
  readonly routed: Array<{ index: number; method: string; path: string }>;
  close(): Promise<void>;
}

async function healthy(backend: string): Promise<boolean> {
  try {
    return (await fetch(`${backend}/healthz`, { signal: AbortSignal.timeout(2000) })).status === 200;
  } catch {
    return false;
  }
}

export async function startRoundRobinProxy(backends: string[], port = 0): Promise<RoundRobinProxy> {
  let turn = 0;
  let pinned: number | undefined;
  const pinnedPaths = new Map<string, number>();
  const routed: RoundRobinProxy['routed'] = [];

  async function pick(req: IncomingMessage): Promise<number | undefined> {
    let index: number | undefined;
    const path = req.url ?? '/';
    const byPath = [...pinnedPaths].find(([prefix]) => path.startsWith(prefix));
    if (byPath) index = byPath[1];
    else if (pinned !== undefined) {
      index = pinned;
      pinned = undefined;
    } else {
      for (let tried = 0; tried < backends.length && index === undefined; tried += 1) {
        const candidate = turn++ % backends.length;
        if (await healthy(backends[candidate]!)) index = candidate;
      }
    }
    if (index !== undefined) routed.push({ index, method: req.method ?? 'GET', path: req.url ?? '/' });
    return index;
  }

  const server: Server = createServer((req, res) => {
    void pick(req).then((index) => {
      if (index === undefined) {
        res.writeHead(502).end('no healthy backend');
        return;
      }
      const target = new URL(backends[index]!);
      const upstream = httpRequest(
        { host: target.hostname, port: target.port, method: req.method, path: req.url, headers: req.headers },
        (answer) => {
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
        },
      );
      upstream.on('error', () => (res.headersSent ? res.destroy() : res.writeHead(502).end('backend failed')));
      req.pipe(upstream);
    });
  });

  server.on('upgrade', (req: IncomingMessage, client: Socket, head: Buffer) => {
    client.on('error', () => undefined);
    void pick(req).then((index) => {
      if (index === undefined) {
        client.end('HTTP/1.1 502 Bad Gateway\r\nConnection: close\r\n\r\n');
        return;
      }
      const target = new URL(backends[index]!);
      const upstream = connect(Number(target.port), target.hostname, () => {
        // The upgrade request as it came, then raw bytes both ways.
        const lines = [`${req.method} ${req.url} HTTP/1.1`];
        for (let i = 0; i < req.rawHeaders.length; i += 2) lines.push(`${req.rawHeaders[i]}: ${req.rawHeaders[i + 1]}`);
        upstream.write(`${lines.join('\r\n')}\r\n\r\n`);
        if (head.length > 0) upstream.write(head);
        upstream.pipe(client);
        client.pipe(upstream);
      });
      upstream.on('error', () => client.destroy());
      upstream.on('close', () => client.destroy());
      client.on('close', () => upstream.destroy());
    });
  });

  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  const actual = (server.address() as AddressInfo).port;
  return {
    url: `http://localhost:${actual}`,
    port: actual,
    pinNext: (index) => {
      pinned = index;
    },
    pinPaths: (prefix, index) => {
      pinnedPaths.set(prefix, index);
    },
    routed,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
