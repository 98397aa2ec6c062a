import { type IncomingMessage, type Server, type ServerResponse, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SIGNATURE_HEADER, verifyWebhookSignature } from '../../src/functions/webhook-signature.js';

export interface ReceivedToolRequest {
  method: string;
  /** Path and query as requested. */
  target: string;
  headers: IncomingMessage['headers'];
  rawBody: string;
  /** The parsed POST body, or the GET query's fields (arguments parsed). */
  payload: { function_name?: string; tool_call_id?: string; arguments?: unknown };
  signatureValid: boolean;
}

export type ToolHandler = (request: ReceivedToolRequest, res: ServerResponse) => void;

/**
 * A customer's function endpoint: records every request, checks its signature with `secret`, and
 * answers with the handler registered for the request's path (404 without one). Reached by the
 * host name `localhost`, as customers configure it.
 */
export async function startToolReceiver(secret: string): Promise<{
  url(path: string): string;
  on(path: string, handler: ToolHandler): void;
  received: ReceivedToolRequest[];
  close(): Promise<void>;
}> {
  const handlers = new Map<string, ToolHandler>();
  const received: ReceivedToolRequest[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const rawBody = Buffer.concat(chunks).toString('utf8');
      const target = req.url ?? '/';
      const url = new URL(target, 'http://localhost');
      let payload: ReceivedToolRequest['payload'] = {};
      try {
        if (req.method === 'GET') {
          payload = {
            function_name: url.searchParams.get('function_name') ?? undefined,
            tool_call_id: url.searchParams.get('tool_call_id') ?? undefined,
            arguments: JSON.parse(url.searchParams.get('arguments') ?? 'null'),
          };
        } else payload = JSON.parse(rawBody);
      } catch {
        // recorded as it came; the test checks what it needs
      }
      const signed = req.method === 'GET' ? target : rawBody;
      const header = req.headers[SIGNATURE_HEADER];
      const request: ReceivedToolRequest = {
        method: req.method ?? '',
        target,
        headers: req.headers,
        rawBody,
        payload,
        signatureValid: verifyWebhookSignature(secret, typeof header === 'string' ? header : undefined, signed),
      };
      received.push(request);
      const handler = handlers.get(url.pathname);
      if (!handler) {
        res.writeHead(404).end();
        return;
      }
      handler(request, res);
    });
  });
  const sockets = new Set<import('node:net').Socket>();
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: (path) => `http://localhost:${port}${path}`,
    on: (path, handler) => handlers.set(path, handler),
    received,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

/** Answers with JSON. */
export function json(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}

/** Starts an SSE answer; returns a writer of `event`/`data` pairs. */
export function sse(res: ServerResponse): (event: string, data: unknown) => void {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  res.flushHeaders();
  return (event, data) =>
    res.write(`event: ${event}\ndata: ${typeof data === 'string' ? data : JSON.stringify(data)}\n\n`);
}
