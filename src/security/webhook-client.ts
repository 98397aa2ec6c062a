import { createHmac } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { type AddressPolicy, AddressPolicyError, guardedLookup, literalHostProblem } from './address-policy.js';

/**
 * Posts JSON to a customer's webhook (and fetches hold music). Addresses are checked when the
 * connection is made (not only when the URL was configured), so a name that later resolves
 * somewhere else cannot reach the cloud metadata service or a link-local address.
 */

/** Why a URL may not be used as a webhook, or undefined when it may (syntax and literal addresses). */
export function webhookUrlProblem(raw: string, policy: AddressPolicy): string | undefined {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return 'is not a URL';
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return 'must be an http:// or https:// URL';
  if (url.username || url.password) return 'must not carry credentials';
  return literalHostProblem(url, policy);
}

/** base64(HMAC-SHA256(base64-decoded secret, timestamp + "." + body)), as pinless dial-in signs. */
export function pinlessSignature(secretBase64: string, timestamp: string, body: string): string {
  return createHmac('sha256', Buffer.from(secretBase64, 'base64')).update(`${timestamp}.${body}`).digest('base64');
}

export interface WebhookResult {
  status: number;
  body: string;
}

/** POSTs `body` as JSON; rejects on a forbidden address, a network error or the timeout. */
export async function postJson(
  rawUrl: string,
  body: string,
  headers: Record<string, string>,
  options: { policy: AddressPolicy; timeoutMs: number },
): Promise<WebhookResult> {
  const headersOut = {
    'content-type': 'application/json',
    'content-length': String(Buffer.byteLength(body)),
    ...headers,
  };
  // A webhook reply is small; keep at most 64 KiB of it.
  const reply = await guardedRequest(rawUrl, 'POST', headersOut, body, {
    ...options,
    maxBytes: 65_536,
    truncate: true,
  });
  return { status: reply.status, body: reply.body.toString('utf8') };
}

/** GETs a customer's file (hold music): the same address checks; larger than `maxBytes` is an error. */
export async function getBytes(
  rawUrl: string,
  options: { policy: AddressPolicy; timeoutMs: number; maxBytes: number },
): Promise<{ status: number; contentType: string | undefined; body: Buffer }> {
  return guardedRequest(rawUrl, 'GET', {}, undefined, { ...options, truncate: false });
}

/**
 * One request whose connection is only made to an allowed address: the address actually
 * connected to is checked, whatever DNS said when the URL was saved.
 */
function guardedRequest(
  rawUrl: string,
  method: 'GET' | 'POST',
  headers: Record<string, string>,
  body: string | undefined,
  options: { policy: AddressPolicy; timeoutMs: number; maxBytes: number; truncate: boolean },
): Promise<{ status: number; contentType: string | undefined; body: Buffer }> {
  const problem = webhookUrlProblem(rawUrl, options.policy);
  if (problem) return Promise.reject(new AddressPolicyError(`webhook ${rawUrl} ${problem}`));
  const url = new URL(rawUrl);
  const request = url.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        method,
        headers,
        timeout: options.timeoutMs,
        lookup: guardedLookup(options.policy, 'webhook'),
      },
      (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size <= options.maxBytes) chunks.push(chunk);
          else if (!options.truncate) req.destroy(new Error(`${rawUrl} is larger than ${options.maxBytes} bytes`));
        });
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            contentType: res.headers['content-type'],
            body: Buffer.concat(chunks),
          }),
        );
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error(`no answer within ${options.timeoutMs} ms`)));
    req.on('error', reject);
    req.end(body);
  });
}
