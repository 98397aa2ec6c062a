import { type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

/** How long the receiver takes to answer, ms: a quick booking service, so the calls' fillers rarely start. */
export const FUNCTION_RECEIVER_DELAY_MS = 200;
const MAX_BODY_BYTES = 64 * 1024;

export interface FunctionReceiver {
  /** `http://localhost:<port>`: a configuration's `webhook_tools.<name>.url` is this plus `/<name>`. */
  url: string;
  /** Requests answered, by function name (the last path segment). */
  readonly requests: Record<string, number>;
  close(): Promise<void>;
}

/**
 * The load test's stand-in for a customer's function webhooks, so a scenario whose answers need a
 * function runs with nothing else to start: every POST is answered after a short delay with
 * `{"ok": true, "function": <name>, "reference": "LT-<n>"}`. It does not check signatures (it
 * knows no configuration's secret); the example receiver in `examples/` shows how.
 */
export async function startFunctionReceiver(
  port: number,
  delayMs = FUNCTION_RECEIVER_DELAY_MS,
): Promise<FunctionReceiver> {
  const requests: Record<string, number> = {};
  let answered = 0;
  const server: Server = createServer((req, res) => {
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) req.destroy();
    });
    req.on('end', () => {
      const name = new URL(req.url ?? '/', 'http://localhost').pathname.split('/').filter(Boolean).at(-1) ?? '';
      requests[name] = (requests[name] ?? 0) + 1;
      answered += 1;
      const body = JSON.stringify({ ok: true, function: name, reference: `LT-${answered}` });
      setTimeout(() => res.writeHead(200, { 'content-type': 'application/json' }).end(body), delayMs);
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, 'localhost', () => resolve());
  });
  const address = server.address() as AddressInfo;
  return {
    url: `http://localhost:${address.port}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
