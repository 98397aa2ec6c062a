import formbody from '@fastify/formbody';
import type { FastifyInstance } from 'fastify';
import type { BotConfigService } from '../bots/bot-config-service.js';
import type { AccountsRepo } from '../store/accounts-repo.js';
import { buildSayHangupTwiml } from '../telephony/twiml.js';
import { isValidTwilioSignature } from '../telephony/twilio-signature.js';

export interface TwilioWebhookOptions {
  service: BotConfigService;
  accounts: AccountsRepo;
  publicUrl: string;
  /** When set, every webhook must carry a valid X-Twilio-Signature. */
  authToken?: string;
}

const XML = 'text/xml; charset=utf-8';

/**
 * The voice webhook a Twilio number (or TwiML App) points at. The carrier calls it without an API
 * key; the unguessable configuration id and, when configured, the signature are the gate.
 */
export async function twilioWebhookRoutes(app: FastifyInstance, opts: TwilioWebhookOptions): Promise<void> {
  await app.register(formbody, { bodyLimit: 64 * 1024 });

  app.post<{ Params: { id: string } }>('/twilio/voice/:id', async (request, reply) => {
    const params = (request.body ?? {}) as Record<string, unknown>;
    if (opts.authToken) {
      const url = opts.publicUrl + request.url;
      const signature = request.headers['x-twilio-signature'];
      if (!isValidTwilioSignature(opts.authToken, typeof signature === 'string' ? signature : undefined, url, params)) {
        request.log.warn('twilio webhook signature rejected');
        return reply.status(403).type(XML).send(buildSayHangupTwiml('This request could not be verified.'));
      }
    }
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
  });
}
