import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Clock } from '../shared/clock.js';
import type { Logger } from 'pino';
import { z } from 'zod';
import type { PhoneCalls } from '../calls/phone-calls.js';
import type { HeldKind } from '../cluster/coordinator.js';
import { websocketBase } from '../config/env.js';
import type { DialinCalls } from '../dialin/dialin-calls.js';
import type { DialoutService } from '../dialout/dialout-service.js';
import { CLOSE } from '../shared/close-codes.js';
import { isValidTwilioSignature } from '../telephony/twilio-signature.js';
import { TwilioTransport } from '../telephony/twilio-transport.js';
import type { Forwarding } from './forwarding.js';

export interface MediaStreamOptions {
  /** Calls to a configuration's wssUrl: the route hands each accepted stream to this service. */
  phoneCalls: PhoneCalls;
  publicUrl: string;
  /** When set, the upgrade request must carry a valid X-Twilio-Signature. */
  authToken?: string;
  /** Pinless dial-in calls waiting for a bot; their streams come to /ws/dialin/:callId. */
  dialinCalls: DialinCalls;
  /** Answered dial-out legs; their streams come to /ws/dialout/:legId and join their rooms. */
  dialout: DialoutService;
  /** A dial-in caller's or dial-out leg's stream that lands on another node than its own is relayed there. */
  forwarding: Forwarding;
  /** The calls' clock (shared/clock.ts): the carrier's audio rate is checked against it. */
  clock: Clock;
}

/** How /openapi.json describes a media stream socket (the upgrade, or a 404 for a plain GET). */
function socketDoc(summary: string) {
  const description =
    "The carrier's Twilio Media Streams socket, signature-checked. Close codes are listed in the README.";
  return {
    summary,
    description,
    response: { 101: z.null().describe('Switching Protocols'), 404: z.null().describe('Not an upgrade') },
  };
}

/** The media websocket at each configuration's `wssUrl`: one socket per call leg. */
export async function mediaStreamRoutes(app: FastifyInstance, opts: MediaStreamOptions): Promise<void> {
  const { forwarding } = opts;

  /** The carrier signs the wss:// URL of the upgrade, without query parameters. */
  function signatureValid(request: FastifyRequest): boolean {
    if (!opts.authToken) return true;
    const signature = request.headers['x-twilio-signature'];
    const url = websocketBase(opts.publicUrl) + request.url.split('?')[0];
    return isValidTwilioSignature(opts.authToken, typeof signature === 'string' ? signature : undefined, url, {});
  }

  /**
   * A stream for a leg the service already knows (a dial-in caller on hold, an answered dial-out
   * callee), held by one node as `kind`: signature first, then `connect` hands it over, or it is
   * closed as unknown.
   */
  function knownLegRoute(
    path: string,
    what: string,
    logKey: string,
    kind: HeldKind,
    legs: { holds(id: string): boolean; connect(id: string, transport: TwilioTransport): boolean },
  ): void {
    type LegRequest = FastifyRequest<{ Params: { id: string } }>;
    const preHandler = forwarding.hook((request: LegRequest) =>
      legs.holds(request.params.id) ? undefined : forwarding.nodeHolding(kind, request.params.id),
    );
    const schema = socketDoc(`Media stream of a ${what}`);
    app.get<{ Params: { id: string } }>(
      path,
      { websocket: true, schema, preHandler },
      forwarding.relaying((socket, request: LegRequest) => {
        const log = request.log.child({ [logKey]: request.params.id }) as Logger;
        const transport = new TwilioTransport(socket, log, undefined, request.raw.socket, opts.clock);
        if (!signatureValid(request)) {
          log.warn(`${what} media stream signature rejected`);
          transport.close(CLOSE.policyViolation, 'invalid X-Twilio-Signature');
          return;
        }
        if (!legs.connect(request.params.id, transport)) {
          log.info(`media stream for an unknown or finished ${what}`);
          transport.close(CLOSE.notFound, `unknown or finished ${what}`);
        }
      }),
    );
  }

  knownLegRoute('/ws/dialin/:id', 'dial-in call', 'callId', 'dialin', opts.dialinCalls);
  knownLegRoute('/ws/dialout/:id', 'dial-out leg', 'dialoutLeg', 'dialout', opts.dialout);

  app.get<{ Params: { id: string } }>(
    '/ws/twilio/:id',
    { websocket: true, schema: socketDoc("A configuration's wssUrl") },
    (socket, request) => {
      // Fastify's logger is the process's pino instance (buildApp passes it in), typed more narrowly.
      const log = request.log.child({ botConfigId: request.params.id }) as Logger;
      // Listeners first: the carrier sends `connected` and `start` right after the upgrade.
      const transport = new TwilioTransport(socket, log, undefined, request.raw.socket, opts.clock);
      if (!signatureValid(request)) {
        log.warn('media stream signature rejected');
        transport.close(CLOSE.policyViolation, 'invalid X-Twilio-Signature');
        return;
      }
      opts.phoneCalls.start(request.params.id, transport, log);
    },
  );
}
