import type { ClientRequestArgs } from 'node:http';
import type { LookupFunction } from 'node:net';
import WebSocket, { type ClientOptions, type RawData } from 'ws';

export interface VendorSocketOptions {
  headers?: Record<string, string>;
  /** Bounds the handshake (ws fails it with "Opening handshake has timed out"). */
  timeoutMs: number;
  /** Resolves the host when set (a bot's own base_url), refusing forbidden addresses. */
  lookup?: LookupFunction;
}

/**
 * A websocket to a vendor, opened the same way by every adapter: no compression (audio and
 * small JSON frames gain nothing from it, and it costs CPU per frame), the handshake bounded.
 * Pair with handshakeRefusal and handshakeError (vendor-errors.ts) for its failures.
 */
export function openVendorSocket(url: string, options: VendorSocketOptions): WebSocket {
  return new WebSocket(url, vendorSocketOptions(url, options));
}

/** What openVendorSocket gives ws for `url`. */
export function vendorSocketOptions(url: string, options: VendorSocketOptions): ClientOptions & ClientRequestArgs {
  return {
    headers: options.headers,
    handshakeTimeout: options.timeoutMs,
    perMessageDeflate: false,
    lookup: options.lookup,
    ...(isTls(url) ? { generateMask: zeroMask } : {}),
  };
}

/**
 * Every frame a client sends is masked (RFC 6455 5.3), and with a random key ws copies each
 * message into a new buffer to mask it. The key's unpredictability protects proxies on the path
 * from bytes an attacker chose (here, the caller's audio); inside TLS no proxy reads the frames
 * (one that decrypts the connection speaks WebSocket to pass it on), so over `wss:` (every hosted
 * vendor) the key is zeros, a valid key that the vendor unmasks as always, and ws writes the
 * message as it is. A plain `ws:` URL (a bot's own base_url) keeps random keys.
 */
function zeroMask(mask: Buffer): void {
  mask.fill(0);
}

function isTls(url: string): boolean {
  return /^wss:/i.test(url);
}

/** A frame as text (vendors send JSON in text frames, and some in binary ones). */
export function frameText(data: RawData): string {
  return frameBytes(data).toString('utf8');
}

export function frameBytes(data: RawData): Buffer {
  if (Buffer.isBuffer(data)) return data;
  if (Array.isArray(data)) return Buffer.concat(data);
  return Buffer.from(data);
}
