import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { Logger } from 'pino';
import { z } from 'zod';
import { type LiveCalls, SHUTDOWN_REASON } from '../lifecycle/live-calls.js';
import type { RoomTokens } from '../rooms/room-tokens.js';
import { answerBody, MAX_SDP_BYTES, offerBody, patchBody } from '../rooms/webrtc/webrtc-messages.js';
import type { WebRtcPeers } from '../rooms/webrtc/webrtc-peers.js';
import { ApiError } from '../shared/api-error.js';
import { BODY_ERRORS, errorResponses } from './error-responses.js';
import type { Forwarding } from './forwarding.js';

export interface WebRtcRoutesOptions {
  peers: WebRtcPeers;
  tokens: RoomTokens;
  liveCalls: LiveCalls;
  /** A room lives on one node: another node forwards its offers and candidates there. */
  forwarding: Forwarding;
  /** Browser origins (or `*`) whose pages may send offers (CORS), as for POST /v1/bots/start. */
  corsOrigins: readonly string[];
}

/** Room names are base64url; anything else is not a room. */
const ROOM_NAME = /^[A-Za-z0-9_-]{1,64}$/;
const OFFER_PATH = '/rooms/:name/offer';
/** An offer is one SDP and a little JSON around it; a PATCH a few candidates. */
const BODY_LIMIT_BYTES = MAX_SDP_BYTES + 16 * 1024;
const PREFLIGHT_MAX_AGE_SECS = 600;

const params = z.object({ name: z.string().regex(ROOM_NAME, 'not a room name') });
const query = z.object({ token: z.string().max(2048).optional() });

/** The room token: `?token=` (what bots/start puts in the offer URL) or `Authorization: Bearer v1.…`. */
function tokenOf(request: FastifyRequest, queryToken: string | undefined): string | undefined {
  const auth = request.headers.authorization;
  if (auth?.startsWith('Bearer v1.')) return auth.slice('Bearer '.length);
  return queryToken;
}

/**
 * The SmallWebRTC offer endpoint of a room: POST an SDP offer, PATCH ICE candidates. The room
 * token is checked as for the room socket; a room held by another node is answered there (its
 * media then flows straight to that node's UDP ports).
 */
export async function webrtcRoutes(instance: FastifyInstance, opts: WebRtcRoutesOptions): Promise<void> {
  const app = instance.withTypeProvider<ZodTypeProvider>();
  const allowedOrigin = (origin: string | undefined): string | undefined =>
    origin === undefined
      ? undefined
      : opts.corsOrigins.includes('*')
        ? '*'
        : opts.corsOrigins.includes(origin)
          ? origin
          : undefined;

  app.addHook('onSend', async (request, reply, payload) => {
    const origin = allowedOrigin(request.headers.origin);
    reply.header('vary', 'Origin');
    reply.header('cache-control', 'no-store');
    if (origin) reply.header('access-control-allow-origin', origin);
    return payload;
  });

  app.options(
    OFFER_PATH,
    {
      schema: {
        summary: 'CORS preflight of the WebRTC offer endpoint',
        params,
        response: { 204: z.null().describe('The allowed origin, methods and headers') },
      },
    },
    async (request, reply) => {
      if (allowedOrigin(request.headers.origin)) {
        reply.header('access-control-allow-methods', 'POST, PATCH');
        reply.header('access-control-allow-headers', 'authorization, content-type');
        reply.header('access-control-max-age', String(PREFLIGHT_MAX_AGE_SECS));
      }
      return reply.status(204).send(null);
    },
  );

  /** The room is held by another node: its offers and candidates are answered there. */
  const preHandler = opts.forwarding.hook((request: FastifyRequest<{ Params: { name: string } }>) => {
    const { name } = request.params;
    return opts.peers.hasRoom(name) || !ROOM_NAME.test(name) ? undefined : opts.forwarding.nodeHolding('room', name);
  });

  /** The room token (every node checks it with the deployment's key), and no joining while draining. */
  function admit(request: FastifyRequest, name: string, queryToken: string | undefined): void {
    const check = opts.tokens.verify(tokenOf(request, queryToken), name);
    if (!check.ok) {
      request.log.info({ room: name, why: check.why }, 'room token refused');
      throw new ApiError(check.why === 'wrong-room' ? 'forbidden-error' : 'authentication-error', check.message);
    }
    if (opts.liveCalls.isDraining) throw new ApiError('service-unavailable', SHUTDOWN_REASON);
  }

  app.post(
    OFFER_PATH,
    {
      bodyLimit: BODY_LIMIT_BYTES,
      preHandler,
      schema: {
        summary: "Join a room over WebRTC: the SDP offer of Pipecat's SmallWebRTC transport",
        description:
          'The URL (with its ?token=) comes from POST /v1/bots/start with "transport": "webrtc". ' +
          'The first offer has no pc_id; the answer names one, which later offers (renegotiation, or ' +
          'restart_pc for a new connection after a network change) and ICE candidate PATCHes carry.',
        params,
        querystring: query,
        body: offerBody,
        response: {
          200: answerBody,
          ...errorResponses(
            ...BODY_ERRORS,
            'authentication-error',
            'forbidden-error',
            'not-found',
            'conflict-error',
            'service-unavailable',
            'server-error',
          ),
        },
      },
    },
    async (request) => {
      admit(request, request.params.name, request.query.token);
      const log = request.log.child({ room: request.params.name }) as Logger;
      return opts.peers.offer(request.params.name, request.body, log);
    },
  );

  app.patch(
    OFFER_PATH,
    {
      bodyLimit: BODY_LIMIT_BYTES,
      preHandler,
      schema: {
        summary: 'Trickled ICE candidates of a WebRTC participant',
        params,
        querystring: query,
        body: patchBody,
        response: {
          200: z.object({ status: z.literal('success'), added: z.number().int() }),
          ...errorResponses(...BODY_ERRORS, 'authentication-error', 'forbidden-error', 'not-found', 'rate-limit-error'),
        },
      },
    },
    async (request) => {
      admit(request, request.params.name, request.query.token);
      const added = await opts.peers.patch(request.params.name, request.body);
      return { status: 'success' as const, added };
    },
  );
}
