import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import { z } from 'zod';
import { type LiveCalls, SHUTDOWN_REASON } from '../lifecycle/live-calls.js';
import { roomPageHtml } from '../rooms/client/room-page.js';
import { CLOSE } from '../shared/close-codes.js';
import type { RoomManager } from '../rooms/room-manager.js';
import type { Coordinator } from '../cluster/coordinator.js';
import type { Forwarding } from './forwarding.js';

export interface RoomRoutesOptions {
  rooms: RoomManager;
  /** While the server drains, nobody new joins a room. */
  liveCalls: LiveCalls;
  /**
   * Which node holds a room. A room lives on one node; its page and socket are served by every
   * node, which relays the socket to the room's node (one public address, and the room's limits
   * are kept where the room is).
   */
  cluster: Coordinator;
  forwarding: Forwarding;
}

/** Room names are base64url; anything else is not a room. */
const ROOM_NAME = /^[A-Za-z0-9_-]{1,64}$/;

/**
 * The room token from the websocket request: preferably the second subprotocol
 * (`new WebSocket(url, ["rtvi-ai", token])`, which keeps it out of URLs and access logs), or
 * `?token=` for clients that cannot set subprotocols.
 */
function tokenOf(protocolHeader: string | string[] | undefined, query: { token?: unknown }): string | undefined {
  const header = Array.isArray(protocolHeader) ? protocolHeader.join(',') : (protocolHeader ?? '');
  const fromHeader = header
    .split(',')
    .map((p) => p.trim())
    .find((p) => p.startsWith('v1.'));
  if (fromHeader) return fromHeader;
  return typeof query.token === 'string' ? query.token : undefined;
}

/** How /openapi.json describes the two routes. */
const pageDoc = {
  summary: 'The web client of a room',
  response: {
    200: { description: 'The room page', content: { 'text/html': { schema: z.string() } } },
    404: {
      description: 'A notice that the room does not exist or has ended',
      content: { 'text/html': { schema: z.string() } },
    },
  },
};
const socketDoc = {
  summary: "A room's socket",
  description:
    'The room token rides in the second subprotocol (`v1.…`) or in ?token=. Close codes are listed in the README.',
  response: { 101: z.null().describe('Switching Protocols'), 404: z.null().describe('Not an upgrade') },
};

/** GET /rooms/:name serves the web client; /rooms/:name/ws is its token-checked websocket. */
export async function roomRoutes(app: FastifyInstance, opts: RoomRoutesOptions): Promise<void> {
  app.get<{ Params: { name: string } }>('/rooms/:name', { schema: pageDoc }, async (request, reply) => {
    const { name } = request.params;
    const room = ROOM_NAME.test(name) ? opts.rooms.get(name) : undefined;
    const elsewhere = !room && ROOM_NAME.test(name) && (await opts.cluster.holderOf('room', name)) !== undefined;
    reply.header('cache-control', 'no-store');
    reply.header(
      'content-security-policy',
      "default-src 'self'; script-src 'unsafe-inline' blob:; style-src 'unsafe-inline'; img-src 'self' data: blob:; connect-src 'self' ws: wss:; media-src 'self' blob:",
    );
    reply.type('text/html; charset=utf-8');
    if (!room && !elsewhere) reply.status(404);
    return roomPageHtml(name, room !== undefined || elsewhere);
  });

  type SocketRequest = FastifyRequest<{ Params: { name: string }; Querystring: { token?: string } }>;
  // A good token is good on every node (they share the key); the room's node checks it and takes the participant.
  const preHandler = opts.forwarding.hook((request: SocketRequest) => {
    const { name } = request.params;
    return opts.rooms.get(name) || !ROOM_NAME.test(name) ? undefined : opts.forwarding.nodeHolding('room', name);
  });
  app.get<{ Params: { name: string }; Querystring: { token?: string } }>(
    '/rooms/:name/ws',
    { websocket: true, schema: socketDoc, preHandler },
    opts.forwarding.relaying((socket, request: SocketRequest) => {
      const { name } = request.params;
      const log = request.log.child({ room: name }) as Logger;
      const check = opts.rooms.tokens.verify(tokenOf(request.headers['sec-websocket-protocol'], request.query), name);
      if (!check.ok) {
        log.info({ why: check.why }, 'room token refused');
        socket.close(check.why === 'wrong-room' ? CLOSE.wrongRoom : CLOSE.invalidToken, check.message);
        return;
      }
      if (opts.liveCalls.isDraining) {
        log.info('room join refused: the server is shutting down');
        socket.close(CLOSE.goingAway, SHUTDOWN_REASON);
        return;
      }
      const room = opts.rooms.get(name);
      if (!room || room.isClosed) {
        socket.close(CLOSE.notFound, 'room not found or has closed');
        return;
      }
      room.admit(socket, log);
    }),
  );
}
