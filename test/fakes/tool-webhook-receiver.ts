import { type IncomingHttpHeaders, type Server, type ServerResponse, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type Clock, REAL_CLOCK } from '../../src/shared/clock.js';

export interface ToolRequest {
  path: string;
  method: string;
  headers: IncomingHttpHeaders;
  raw: string;
  body: Record<string, unknown>;
  receivedAtMs: number;
  answeredAtMs?: number;
}

/** How the receiver answers a function: after `delayMs`, with `status` and `result`; or never; or as SSE. */
export interface ToolBehaviour {
  delayMs?: number;
  status?: number;
  result?: unknown;
  /** Take the request and never answer. */
  hang?: boolean;
  /** Answer with these SSE events (`event`, JSON `data`), `gapMs` apart. */
  sse?: Array<{ event: string; data: unknown }>;
  gapMs?: number;
}

/**
 * A customer's function webhooks: one path per function (`/tools/<name>`), each answering as its
 * behaviour says, every request recorded. Reached by host name (`localhost`), as customers configure it.
 * `clock`: what its delays and times are on; the calls' clock when they run on a scaled one.
 */
export async function startToolReceiver(behaviours: Record<string, ToolBehaviour>, clock: Clock = REAL_CLOCK) {
  const requests: ToolRequest[] = [];
  const open = new Set<ServerResponse>();
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks).toString();
      let body: Record<string, unknown> = {};
      try {
        body = JSON.parse(raw) as Record<string, unknown>;
      } catch {}
      const path = (req.url ?? '/').split('?')[0]!;
      const record: ToolRequest = {
        path,
        method: req.method ?? '',
        headers: req.headers,
        raw,
        body,
        receivedAtMs: clock.now(),
      };
      requests.push(record);
      const behaviour = behaviours[path.replace(/^\/tools\//, '')] ?? {
        status: 404,
        result: { error: 'no such tool' },
      };
      if (behaviour.hang) {
        open.add(res);
        return;
      }
      clock.setTimeout(() => {
        record.answeredAtMs = clock.now();
        if (behaviour.sse) {
          res.writeHead(200, { 'content-type': 'text/event-stream' });
          let at = 0;
          for (const event of behaviour.sse) {
            clock.setTimeout(() => res.write(`event: ${event.event}\ndata: ${JSON.stringify(event.data)}\n\n`), at);
            at += behaviour.gapMs ?? 0;
          }
          clock.setTimeout(() => res.end(), at);
          return;
        }
        res.writeHead(behaviour.status ?? 200, { 'content-type': 'application/json' });
        res.end(JSON.stringify(behaviour.result ?? { ok: true }));
      }, behaviour.delayMs ?? 0);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    /** The URL of a function's webhook, by host name. */
    urlOf: (name: string) => `http://localhost:${port}/tools/${name}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        for (const res of open) res.destroy();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
