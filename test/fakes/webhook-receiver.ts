import { type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pinlessSignature } from '../../src/security/webhook-client.js';

export interface ReceivedWebhook {
  body: Record<string, unknown>;
  timestamp: string | undefined;
  signature: string | undefined;
  /** Whether the signature matched the secret the receiver was given for its number. */
  signatureValid: boolean;
}

/**
 * A customer's room_creation_api: records each POST and checks its pinless signature. `onReceived`
 * runs after the answer has been sent, as a server that answers at once and then acts would.
 */
export async function startWebhookReceiver(
  secretFor: (to: string) => string | undefined,
  status = 200,
  onReceived?: (webhook: ReceivedWebhook) => void,
): Promise<{ url: string; received: ReceivedWebhook[]; close(): Promise<void> }> {
  const received: ReceivedWebhook[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks).toString();
      const body = JSON.parse(raw) as Record<string, unknown>;
      const timestamp = req.headers['x-pinless-timestamp'] as string | undefined;
      const signature = req.headers['x-pinless-signature'] as string | undefined;
      const secret = secretFor(String(body.To));
      const signatureValid = !!secret && !!timestamp && signature === pinlessSignature(secret, timestamp, raw);
      const webhook = { body, timestamp, signature, signatureValid };
      received.push(webhook);
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ status: 'OK' }));
      onReceived?.(webhook);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  // A host name, as customers configure it: the connection resolves it (and checks each address).
  return {
    url: `http://localhost:${port}/dialin`,
    received,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
