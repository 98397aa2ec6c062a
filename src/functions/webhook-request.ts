import { type IncomingMessage, request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { type AddressPolicy, AddressPolicyError, guardedLookup } from '../security/address-policy.js';
import { webhookUrlProblem } from '../security/webhook-client.js';

/**
 * Opens one webhook tool request and resolves with the response as it starts, so a streamed
 * answer can be read while it arrives. The address policy is applied to the literal host now and
 * to every address a host name resolves to when the connection is made. Aborting `signal` destroys
 * the request and its response.
 */
export function openWebhookRequest(
  url: URL,
  method: 'GET' | 'POST',
  headers: Record<string, string>,
  body: string | undefined,
  options: { policy: AddressPolicy; signal: AbortSignal },
): Promise<IncomingMessage> {
  const problem = webhookUrlProblem(url.href, options.policy);
  if (problem) return Promise.reject(new AddressPolicyError(`webhook tool URL ${problem}`));
  const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const req = send(url, {
      method,
      headers,
      signal: options.signal,
      lookup: guardedLookup(options.policy, 'webhook tool'),
    });
    req.once('response', resolve);
    req.once('error', reject);
    req.end(body);
  });
}

/** The response body up to `maxBytes`; more than that rejects (a result that large is not one). */
export async function readBody(response: IncomingMessage, maxBytes: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of response as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > maxBytes) {
      response.destroy();
      throw new ResponseTooLargeError(maxBytes);
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

export class ResponseTooLargeError extends Error {
  override name = 'ResponseTooLargeError';
  constructor(readonly maxBytes: number) {
    super(`the response is larger than ${maxBytes} bytes`);
  }
}
