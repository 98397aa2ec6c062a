import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { Readable } from 'node:stream';
import type { EndpointGuard } from './endpoint.js';

export interface EndpointRequest {
  method: 'POST';
  headers: Record<string, string>;
  body: string;
  signal: AbortSignal;
}

/** Statuses whose responses have no body (the Response constructor refuses one). */
const NULL_BODY_STATUSES = new Set([204, 205, 304]);

/**
 * fetch() for a vendor endpoint. Without a guard (the vendor's origin, the operator's override)
 * it is the global fetch. With one (a bot's own base_url) the request goes through node:http(s),
 * whose connections take the guard's `lookup`, since the global fetch cannot check the address it
 * connects to; the answer is a standard Response either way. Redirects are not followed: a vendor
 * API does not redirect its POSTs, and a redirect could lead anywhere.
 */
export function endpointFetch(url: string, init: EndpointRequest, guard: EndpointGuard | undefined): Promise<Response> {
  if (!guard) return fetch(url, init);
  const target = new URL(url);
  const secure = target.protocol === 'https:';
  const request = secure ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const req = request(
      target,
      {
        method: init.method,
        headers: { ...init.headers, 'content-length': String(Buffer.byteLength(init.body)) },
        signal: init.signal,
        lookup: guard.lookup,
        agent: secure ? guard.httpsAgent : guard.httpAgent,
      },
      (res) => {
        const status = res.statusCode ?? 0;
        const headers = new Headers();
        for (const [name, value] of Object.entries(res.headers)) {
          for (const one of Array.isArray(value) ? value : value === undefined ? [] : [value])
            headers.append(name, one);
        }
        try {
          const body = NULL_BODY_STATUSES.has(status) ? null : (Readable.toWeb(res) as ReadableStream<Uint8Array>);
          if (!body) res.resume();
          resolve(new Response(body, { status, statusText: res.statusMessage, headers }));
        } catch (err) {
          // A status fetch would not accept either (below 200 or above 599).
          res.destroy();
          reject(err);
        }
      },
    );
    req.on('error', reject);
    req.end(init.body);
  });
}
