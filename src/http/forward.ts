import { Readable } from 'node:stream';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import WebSocket, { type RawData } from 'ws';
import { ApiError } from '../shared/api-error.js';
import { CLOSE } from '../shared/close-codes.js';

/**
 * Requests that reach a node which does not hold what they are about (a room, a caller on hold,
 * a recording's files) are passed to the node that does, over the nodes' own URLs. A forwarded
 * request carries this header and is never forwarded again, so two nodes that disagree cannot
 * bounce it between them.
 */
export const FORWARDED_HEADER = 'x-switchboard-forwarded-by';

/** Request headers the holding node needs to answer as if it had been asked itself. */
const PASSED_REQUEST_HEADERS = ['authorization', 'content-type', 'accept', 'x-twilio-signature', 'origin'];
/** Response headers passed back unchanged. */
const PASSED_RESPONSE_HEADERS = ['content-type', 'content-disposition', 'content-length', 'cache-control'];

export function wasForwarded(request: FastifyRequest): boolean {
  return request.headers[FORWARDED_HEADER] !== undefined;
}

/** The request body as the holding node should receive it again (already parsed here). */
function bodyOf(request: FastifyRequest): string | undefined {
  if (request.body === undefined || request.method === 'GET' || request.method === 'HEAD') return undefined;
  const type = String(request.headers['content-type'] ?? '');
  if (type.startsWith('application/x-www-form-urlencoded'))
    return new URLSearchParams(request.body as Record<string, string>).toString();
  return JSON.stringify(request.body);
}

/**
 * Answers `request` with what the node at `nodeUrl` answers to it (status, body, the headers
 * that matter), streaming the body. A node that does not answer is a 503: the caller may retry.
 */
export async function forwardRequest(
  request: FastifyRequest,
  reply: FastifyReply,
  nodeUrl: string,
  fromNodeId: string,
): Promise<FastifyReply> {
  const headers: Record<string, string> = { [FORWARDED_HEADER]: fromNodeId };
  for (const name of PASSED_REQUEST_HEADERS) {
    const value = request.headers[name];
    if (typeof value === 'string') headers[name] = value;
  }
  let response: Response;
  try {
    response = await fetch(nodeUrl + request.url, { method: request.method, headers, body: bodyOf(request) });
  } catch (err) {
    request.log.warn({ err, nodeUrl }, 'the node holding this request’s subject did not answer');
    // The route's error handler answers it: a 503 the caller may retry.
    throw new ApiError('service-unavailable', 'the node serving this did not answer; try again');
  }
  reply.status(response.status);
  for (const name of PASSED_RESPONSE_HEADERS) {
    const value = response.headers.get(name);
    if (value !== null) reply.header(name, value);
  }
  if (!response.body) return reply.send();
  return reply.send(Readable.fromWeb(response.body as import('node:stream/web').ReadableStream<Uint8Array>));
}

/**
 * Codes a websocket may be closed with on the wire (1005, 1006 and 1015 only describe what
 * happened): a node that dropped its side is, to the client, a node that went away.
 */
function sendableCode(code: number): number | undefined {
  if (code === CLOSE.noStatus) return undefined;
  if (code === CLOSE.abnormal || code === CLOSE.tlsHandshake) return CLOSE.goingAway;
  return code;
}

export interface RelayOptions {
  fromNodeId: string;
  log: Logger;
  /** The node that holds the socket's subject. */
  nodeUrl: string;
}

/**
 * What the relay accepts from the other node in one message. The client's side is bounded by the
 * server's own websocket limit; the nodes trust each other.
 */
const NODE_MAX_PAYLOAD_BYTES = 16 * 1024 * 1024;

/**
 * Relays an accepted websocket to the same path on another node, message for message (text stays
 * text, binary stays binary) and close code for close code, both ways. Messages that arrive while
 * the relay connects are kept and sent first, in order: a carrier
 * sends `connected` and `start` right after the upgrade. When the other node dies, the socket is
 * closed with 1001, as when a node shuts down.
 */
export function relaySocket(socket: WebSocket, request: FastifyRequest, options: RelayOptions): void {
  const { nodeUrl } = options;
  const protocols = String(request.headers['sec-websocket-protocol'] ?? '')
    .split(',')
    .map((p) => p.trim())
    .filter((p) => p !== '');
  const headers: Record<string, string> = { [FORWARDED_HEADER]: options.fromNodeId };
  const signature = request.headers['x-twilio-signature'];
  if (typeof signature === 'string') headers['x-twilio-signature'] = signature;
  const relay = new WebSocket(nodeUrl.replace(/^http/i, 'ws') + request.url, protocols, {
    headers,
    maxPayload: NODE_MAX_PAYLOAD_BYTES,
  });
  const waiting: Array<{ data: RawData; isBinary: boolean }> = [];
  socket.on('message', (data, isBinary) => {
    if (relay.readyState === WebSocket.OPEN) relay.send(data, { binary: isBinary });
    else waiting.push({ data, isBinary });
  });
  socket.on('close', (code, reason) => closeWith(relay, code, reason));
  relay.on('open', () => {
    for (const { data, isBinary } of waiting.splice(0)) relay.send(data, { binary: isBinary });
  });
  relay.on('message', (data, isBinary) => {
    if (socket.readyState === WebSocket.OPEN) socket.send(data, { binary: isBinary });
  });
  relay.on('close', (code, reason) => closeWith(socket, code, reason));
  relay.on('unexpected-response', (_req, res) => {
    options.log.warn({ nodeUrl, status: res.statusCode }, 'the node holding this socket’s subject refused the relay');
    relay.terminate();
    closeWith(socket, CLOSE.internalError, Buffer.from('the node serving this refused the connection'));
  });
  relay.on('error', (err) => {
    options.log.warn({ err: err.message, nodeUrl }, 'relay to another node failed');
    closeWith(socket, CLOSE.goingAway, Buffer.from('the node serving this went away'));
  });
}

function closeWith(socket: WebSocket, code: number, reason: Buffer): void {
  if (socket.readyState === WebSocket.CLOSED || socket.readyState === WebSocket.CLOSING) return;
  if (socket.readyState === WebSocket.CONNECTING) {
    socket.terminate();
    return;
  }
  const sendable = sendableCode(code);
  if (sendable === undefined) socket.close();
  else socket.close(sendable, reason.subarray(0, 123));
}
