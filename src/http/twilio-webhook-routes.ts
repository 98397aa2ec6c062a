import formbody from '@fastify/formbody';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { websocketBase } from '../config/env.js';
import type { DialinCalls } from '../dialin/dialin-calls.js';
import type { PinlessConfigService } from '../dialin/pinless-config.js';
import type { DialoutService } from '../dialout/dialout-service.js';
import type { LiveCalls } from '../lifecycle/live-calls.js';
import type { BotConfigService } from '../bots/bot-config-service.js';
import type { AccountsRepo } from '../store/accounts-repo.js';
import { buildSayHangupTwiml, buildStreamTwiml } from '../telephony/twiml.js';
import { isValidTwilioSignature } from '../telephony/twilio-signature.js';
import { errorResponses } from './error-responses.js';
import type { Forwarding } from './forwarding.js';
import { noBody, twimlResponse } from './response-schemas.js';

export interface TwilioWebhookOptions {
  service: BotConfigService;
  accounts: AccountsRepo;
  publicUrl: string;
  /** When set, every webhook must carry a valid X-Twilio-Signature. */
  authToken?: string;
  /** Numbers with pinless dial-in, and the calls waiting on them. */
  dialin: { config: PinlessConfigService; calls: DialinCalls };
  /** Outbound legs of rooms: the carrier asks for their TwiML on answer and reports their status. */
  dialout: DialoutService;
  /** Which node placed a dial-out leg: its callbacks that land elsewhere are passed to it. */
  forwarding: Forwarding;
  /** While the server drains, new calls get a 503 so the carrier can try its fallback URL. */
  liveCalls: LiveCalls;
}

const XML = 'text/xml; charset=utf-8';

/**
 * The documented side of a carrier webhook: a form body (read leniently, not validated: the
 * signature is the gate), TwiML answers, and the JSON errors of body parsing.
 */
function webhookSchema(summary: string, responses: Record<number, unknown>) {
  return {
    summary,
    description:
      'Called by the carrier with an application/x-www-form-urlencoded body; checked against X-Twilio-Signature when TWILIO_AUTH_TOKEN is set.',
    response: {
      ...responses,
      403: twimlResponse('The signature did not verify (TwiML that hangs up)'),
      ...errorResponses('json-parsing-error', 'payload-too-large', 'unsupported-media-type'),
    },
  };
}

/**
 * The voice webhook a Twilio number (or TwiML App) points at. The carrier calls it without an API
 * key; the unguessable configuration id and, when configured, the signature are the gate.
 */
export async function twilioWebhookRoutes(app: FastifyInstance, opts: TwilioWebhookOptions): Promise<void> {
  await app.register(formbody, { bodyLimit: 64 * 1024 });

  /** Whether the request is the carrier's; answers 403 TwiML when it is not. */
  function verified(request: FastifyRequest, reply: FastifyReply, params: Record<string, unknown>): boolean {
    if (!opts.authToken) return true;
    const url = opts.publicUrl + request.url;
    const signature = request.headers['x-twilio-signature'];
    if (isValidTwilioSignature(opts.authToken, typeof signature === 'string' ? signature : undefined, url, params))
      return true;
    request.log.warn('twilio webhook signature rejected');
    void reply.status(403).type(XML).send(buildSayHangupTwiml('This request could not be verified.'));
    return false;
  }

  /**
   * A dial-out leg's callbacks go to the node that placed it: the carrier calls the public
   * address, which may be any node, and only the placing node has the leg's room.
   */
  const toLegNode = opts.forwarding.hook((request: FastifyRequest<{ Params: { legId: string } }>) => {
    const { legId } = request.params;
    return opts.dialout.holds(legId) ? undefined : opts.forwarding.nodeHolding('dialout', legId);
  });

  /** A new call while the server drains: 503, which makes Twilio use the number's fallback URL if it has one. */
  function refusedWhileDraining(request: FastifyRequest, reply: FastifyReply): boolean {
    if (!opts.liveCalls.isDraining) return false;
    request.log.info('new call refused: the server is shutting down');
    void reply
      .status(503)
      .type(XML)
      .send(buildSayHangupTwiml('This service is restarting. Please call again in a moment.'));
    return true;
  }

  /**
   * The voice webhook of every number bought through this service, routed by `To`: a number with
   * pinless dial-in puts the caller on hold and tells the customer's server, which starts a bot.
   */
  const newCall = { 503: twimlResponse("The server is shutting down: the carrier tries the number's fallback URL") };
  app.post(
    '/twilio/voice',
    {
      schema: webhookSchema('Voice webhook of numbers bought here: routed by To to pinless dial-in', {
        200: twimlResponse('TwiML'),
        ...newCall,
      }),
    },
    async (request, reply) => {
      const params = (request.body ?? {}) as Record<string, unknown>;
      if (!verified(request, reply, params) || refusedWhileDraining(request, reply)) return reply;
      const to = typeof params.To === 'string' ? params.To : '';
      const from = typeof params.From === 'string' ? params.From.slice(0, 64) : 'unknown';
      const found = to ? await opts.dialin.config.findByAddress(to) : undefined;
      if (!found) {
        request.log.info({ to }, 'call to a number with no dial-in configured');
        return reply.type(XML).send(buildSayHangupTwiml('This number is not connected to an assistant.'));
      }
      const domain = await opts.accounts.domainOf(found.accountId);
      const callId = await opts.dialin.calls.open(found.accountId, domain, found.entry, from, to);
      return reply.type(XML).send(
        buildStreamTwiml({
          streamUrl: `${websocketBase(opts.publicUrl)}/ws/dialin/${callId}`,
          parameters: { callId, from, to },
        }),
      );
    },
  );

  /** A dial-out callee answered: stream the leg to this service, where it joins its room. */
  app.post<{ Params: { legId: string } }>(
    '/twilio/dialout/:legId',
    {
      schema: webhookSchema('Answer webhook of a dial-out leg: streams it into its room', {
        200: twimlResponse('TwiML'),
      }),
      preHandler: toLegNode,
    },
    async (request, reply) => {
      const params = (request.body ?? {}) as Record<string, unknown>;
      if (!verified(request, reply, params)) return reply;
      const leg = opts.dialout.legFor(request.params.legId);
      if (!leg) {
        request.log.info({ legId: request.params.legId }, 'answer webhook for an unknown or finished dial-out leg');
        return reply.type(XML).send(buildSayHangupTwiml('Sorry, this call is no longer needed. Goodbye.'));
      }
      const streamUrl = `${websocketBase(opts.publicUrl)}/ws/dialout/${request.params.legId}`;
      return reply
        .type(XML)
        .send(buildStreamTwiml({ streamUrl, parameters: { legId: request.params.legId, room: leg.room } }));
    },
  );

  /** Status callbacks of dial-out legs: ringing, answered, and how the call ended. */
  app.post<{ Params: { legId: string } }>(
    '/twilio/dialout/:legId/status',
    { schema: webhookSchema('Status callback of a dial-out leg', { 204: noBody('Noted') }), preHandler: toLegNode },
    async (request, reply) => {
      const params = (request.body ?? {}) as Record<string, unknown>;
      if (!verified(request, reply, params)) return reply;
      const status = typeof params.CallStatus === 'string' ? params.CallStatus : '';
      const duration = Number(params.CallDuration);
      opts.dialout.onStatus(request.params.legId, status, {
        durationSecs: Number.isFinite(duration) ? duration : undefined,
        sipCode: typeof params.SipResponseCode === 'string' ? params.SipResponseCode : undefined,
      });
      return reply.status(204).send();
    },
  );

  app.post<{ Params: { id: string } }>(
    '/twilio/voice/:id',
    {
      schema: webhookSchema('Voice webhook of a telephony bot configuration: TwiML that streams the call here', {
        200: twimlResponse('TwiML'),
        404: twimlResponse('No such configuration (TwiML that hangs up)'),
        ...newCall,
      }),
    },
    async (request, reply) => {
      const params = (request.body ?? {}) as Record<string, unknown>;
      if (!verified(request, reply, params) || refusedWhileDraining(request, reply)) return reply;
      const config = await opts.service.loadForCall(request.params.id);
      if (!config) {
        return reply.status(404).type(XML).send(buildSayHangupTwiml('This bot is not available.'));
      }
      const domain = await opts.accounts.domainOf(config.accountId);
      const extra: Record<string, string> = {};
      for (const field of ['From', 'To', 'CallSid'] as const) {
        const value = params[field];
        if (typeof value === 'string' && value.length > 0 && value.length <= 256) extra[field.toLowerCase()] = value;
      }
      return reply.type(XML).send(opts.service.twiml(config.id, domain, extra));
    },
  );
}
