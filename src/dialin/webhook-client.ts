import { createHmac } from 'node:crypto';
import { lookup as dnsLookup } from 'node:dns';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { BlockList, isIP } from 'node:net';

/**
 * Posts JSON to a customer's webhook. Addresses are checked when the connection is made (not only
 * when the URL was configured), so a name that later resolves somewhere else cannot reach the
 * cloud metadata service or a link-local address.
 */

const FORBIDDEN = new BlockList();
// Link-local, which includes the cloud metadata address 169.254.169.254.
FORBIDDEN.addSubnet('169.254.0.0', 16, 'ipv4');
FORBIDDEN.addSubnet('fe80::', 10, 'ipv6');
// "This network" and multicast are never a web server.
FORBIDDEN.addSubnet('0.0.0.0', 8, 'ipv4');
FORBIDDEN.addSubnet('224.0.0.0', 4, 'ipv4');
FORBIDDEN.addSubnet('ff00::', 8, 'ipv6');
// AWS's IPv6 metadata endpoint.
FORBIDDEN.addAddress('fd00:ec2::254', 'ipv6');

export class WebhookAddressError extends Error {
  override name = 'WebhookAddressError';
}

export interface WebhookPolicy {
  /** Allow link-local and metadata addresses (an operator's explicit choice, e.g. for a lab). */
  allowLinkLocal: boolean;
}

/** Why a URL may not be used as a webhook, or undefined when it may (syntax and literal addresses). */
export function webhookUrlProblem(raw: string, policy: WebhookPolicy): string | undefined {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return 'is not a URL';
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return 'must be an http:// or https:// URL';
  if (url.username || url.password) return 'must not carry credentials';
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (!policy.allowLinkLocal && isIP(host) && isForbidden(host)) return `points at ${host}, a link-local or metadata address`;
  return undefined;
}

function isForbidden(address: string): boolean {
  const family = isIP(address) === 6 ? 'ipv6' : 'ipv4';
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return FORBIDDEN.check(mapped[1]!, 'ipv4');
  return FORBIDDEN.check(address, family);
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
export async function postJson(rawUrl: string, body: string, headers: Record<string, string>, options: WebhookPolicy & { timeoutMs: number }): Promise<WebhookResult> {
  const headersOut = { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)), ...headers };
  // A webhook reply is small; keep at most 64 KiB of it.
  const reply = await guardedRequest(rawUrl, 'POST', headersOut, body, { ...options, maxBytes: 65_536, truncate: true });
  return { status: reply.status, body: reply.body.toString('utf8') };
}

/** GETs a customer's file (hold music): the same address checks; larger than `maxBytes` is an error. */
export async function getBytes(
  rawUrl: string,
  options: WebhookPolicy & { timeoutMs: number; maxBytes: number },
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
  options: WebhookPolicy & { timeoutMs: number; maxBytes: number; truncate: boolean },
): Promise<{ status: number; contentType: string | undefined; body: Buffer }> {
  const problem = webhookUrlProblem(rawUrl, options);
  if (problem) return Promise.reject(new WebhookAddressError(`webhook ${rawUrl} ${problem}`));
  const url = new URL(rawUrl);
  const request = url.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        method,
        headers,
        timeout: options.timeoutMs,
        lookup: (hostname, lookupOptions, callback) => {
          dnsLookup(hostname, { ...lookupOptions, all: false }, (err, address, family) => {
            if (err) return callback(err, '', 0);
            if (!options.allowLinkLocal && isForbidden(address as string)) {
              return callback(new WebhookAddressError(`webhook host ${hostname} resolves to ${address}, a link-local or metadata address`), '', 0);
            }
            callback(null, address as string, family as number);
          });
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size <= options.maxBytes) chunks.push(chunk);
          else if (!options.truncate) req.destroy(new Error(`${rawUrl} is larger than ${options.maxBytes} bytes`));
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, contentType: res.headers['content-type'], body: Buffer.concat(chunks) }));
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error(`no answer within ${options.timeoutMs} ms`)));
    req.on('error', reject);
    req.end(body);
  });
}
