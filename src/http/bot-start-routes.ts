import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { AccountCalls } from '../cluster/account-calls.js';
import {
  type StartBotBody,
  asBotConfigBody,
  dialinCall,
  dialoutTargets,
  startBotBody,
} from '../bots/start-bot-schema.js';
import { type AppConfig, type WebRtcIceServer, websocketBase } from '../config/env.js';
import type { DialinCalls } from '../dialin/dialin-calls.js';
import type { DialoutService } from '../dialout/dialout-service.js';
import { NATURAL_TURN_POLICY, NATURAL_VAD_STOP_SECS } from '../pipeline/natural-turn-policy.js';
import type { ProviderRegistry } from '../providers/registry.js';
import type { RoomManager } from '../rooms/room-manager.js';
import { errorResponses } from './error-responses.js';
import type { Forwarding } from './forwarding.js';
import { named } from './openapi.js';
import { assertProvidersSetUp, assertWebhookToolUrls, withKnownProviders } from './provider-checks.js';
import type { AddressPolicy } from '../security/address-policy.js';
import { generateWebhookSecret } from '../bots/webhook-secret.js';
import { startedBot } from './response-schemas.js';

export interface BotStartRoutesOptions {
  rooms: RoomManager;
  registry: ProviderRegistry;
  env: AppConfig['env'];
  publicUrl: string;
  /** Dial-in callers on hold; dialin_settings hands one to the new room's bot. */
  dialinCalls: DialinCalls;
  /** Places the calls of dialout_settings once the room is open. */
  dialout: DialoutService;
  /** Which node holds a dial-in caller on hold: a bot for a caller held elsewhere is started there. */
  forwarding: Forwarding;
  /** The account's concurrent calls (SWITCHBOARD_ACCOUNT_MAX_CALLS); a room is one. */
  accountCalls: AccountCalls;
  /** Where webhook_tools URLs may point. */
  webhookPolicy: AddressPolicy;
  /** STUN/TURN servers handed to WebRTC clients (SWITCHBOARD_ICE_SERVERS). */
  iceServers: readonly WebRtcIceServer[];
}

const VISION_PROFILES = new Set(['vision_2024_10', 'vision_2024_08']);

/** Endpoint 1 of the spec: start a bot in a new room. Mounted under /v1 behind the API-key check. */
export async function botStartRoutes(instance: FastifyInstance, opts: BotStartRoutesOptions): Promise<void> {
  const app = instance.withTypeProvider<ZodTypeProvider>();
  const { registry, env } = opts;
  const schema = {
    summary: 'Start a bot in a new room',
    description:
      'Open room_url in a browser with #<token> to talk to the bot; the token joins only that room, until max_duration. ' +
      'With "transport": "websocket" the answer is {ws_url} (the room socket with the token in its query), which Pipecat\'s WebSocketTransport connects with as is. ' +
      'With "transport": "webrtc" it is {webrtcRequestParams: {endpoint}, iceConfig: {iceServers}}: the room\'s offer URL (token in its query) and the STUN/TURN servers, which Pipecat\'s SmallWebRTCTransport connects with as is.',
    body: named(app, 'StartBotRequest', withKnownProviders(startBotBody, registry)),
    response: {
      200: startedBot,
      // not-found: no dial-in call is waiting under dialin_settings' callId.
      ...errorResponses('not-found', 'rate-limit-error', 'service-unavailable'),
    },
  };

  // The caller's audio is on the node that answered the carrier: a room for a held caller opens there.
  const preHandler = opts.forwarding.hook((request: FastifyRequest) => {
    const dialin = dialinCall(request.body as StartBotBody);
    if (!dialin || opts.dialinCalls.holds(dialin.callId)) return undefined;
    return opts.forwarding.nodeHolding('dialin', dialin.callId);
  });

  app.post('/bots/start', { schema, preHandler }, async (request) => {
    const body = request.body;
    assertProvidersSetUp(body, registry, env);
    assertWebhookToolUrls(body, opts.webhookPolicy);
    opts.rooms.assertCapacity();
    const dialin = dialinCall(body);
    // Every target is checked (caller ids, reachable destinations) before a room or call exists.
    const dialPlans = await opts.dialout.plan(request.account.id, dialoutTargets(body), dialin ? 1 : 0);
    const releaseCall = await opts.accountCalls.take(request.account.id);
    let name: string;
    let phoneCall: ReturnType<DialinCalls['claim']> | undefined;
    try {
      name = await opts.rooms.reserve();
    } catch (err) {
      releaseCall();
      throw err;
    }
    try {
      phoneCall = dialin ? opts.dialinCalls.claim(request.account, dialin.callId, dialin.callDomain) : undefined;
    } catch (err) {
      opts.rooms.unreserve(name);
      releaseCall();
      throw err;
    }
    const profile = body.bot_profile;
    const natural = profile === 'natural_conversation_2024_11';
    const configBody = asBotConfigBody(body);
    // Webhook tools are signed; without a secret of the caller's own, the answer carries a new one.
    const generatedSecret =
      body.webhook_tools && Object.keys(body.webhook_tools).length > 0 && !body.webhook_secret
        ? generateWebhookSecret()
        : undefined;
    if (generatedSecret) configBody.webhook_secret = generatedSecret;
    if (natural) {
      // A shorter pause ends speech; the words then decide whether the turn is over. The bot's
      // own vad settings come later in the list, so they still win.
      configBody.config = [
        { service: 'vad', options: [{ name: 'stop_secs', value: NATURAL_VAD_STOP_SECS }] },
        ...configBody.config,
      ];
    }
    const { token, room } = opts.rooms.start(name, {
      config: { id: '', accountId: request.account.id, body: configBody },
      turnPolicy: natural ? NATURAL_TURN_POLICY : undefined,
      vision: VISION_PROFILES.has(profile),
      phoneCall,
      onClosed: releaseCall,
    });
    opts.dialout.start(room, dialPlans);
    if (body.transport === 'websocket') {
      // Pipecat's websocket transport takes only a URL (older versions refuse even a `token` key),
      // so the token rides in the query, where the room socket accepts it.
      return { ws_url: `${websocketBase(opts.publicUrl)}/rooms/${name}/ws?token=${encodeURIComponent(token)}` };
    }
    if (body.transport === 'webrtc') {
      // The SmallWebRTC transport POSTs its offer (and PATCHes candidates) to this URL; it cannot
      // take headers from this answer, so the token rides in the query as for ws_url.
      return {
        webrtcRequestParams: { endpoint: `${opts.publicUrl}/rooms/${name}/offer?token=${encodeURIComponent(token)}` },
        iceConfig: { iceServers: opts.iceServers.map((server) => ({ ...server })) },
        ...(generatedSecret ? { webhook_secret: generatedSecret } : {}),
      };
    }
    return {
      room_url: `${opts.publicUrl}/rooms/${name}`,
      token,
      ...(generatedSecret ? { webhook_secret: generatedSecret } : {}),
    };
  });
}
