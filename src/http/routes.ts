import type { FastifyInstance } from 'fastify';
import { type AuthDeps, requireApiKey } from './auth.js';
import { type BotStartRoutesOptions, botStartRoutes } from './bot-start-routes.js';
import { botConfigRoutes } from './bot-config-routes.js';
import { type CallRoutesOptions, callRoutes, callsPageRoutes } from './call-routes.js';
import { domainRoutes } from './domain-routes.js';
import { type MediaStreamOptions, mediaStreamRoutes } from './media-stream-routes.js';
import { documentFrameworkErrors } from './error-responses.js';
import { API_PREFIX, openApiRoutes } from './openapi.js';
import { type OperatorRoutesOptions, operatorRoutes } from './operator-routes.js';
import { phoneNumberRoutes } from './phone-number-routes.js';
import { recordingDownloadRoutes, recordingRoutes } from './recording-routes.js';
import { type RoomRoutesOptions, roomRoutes } from './room-routes.js';
import { startBotCors } from './start-bot-cors.js';
import { type TwilioWebhookOptions, twilioWebhookRoutes } from './twilio-webhook-routes.js';
import { type WebRtcRoutesOptions, webrtcRoutes } from './webrtc-routes.js';

type Options<T extends (app: FastifyInstance, opts: never) => unknown> = Parameters<T>[1];

/** Everything the routes serve from; app.ts builds it. */
export interface RouteDeps {
  auth: AuthDeps;
  corsOrigins: readonly string[];
  operator: OperatorRoutesOptions;
  botConfigs: Options<typeof botConfigRoutes>;
  phoneNumbers: Options<typeof phoneNumberRoutes>;
  domain: Options<typeof domainRoutes>;
  recordings: Options<typeof recordingRoutes>;
  calls: CallRoutesOptions;
  botStart: BotStartRoutesOptions;
  webhooks: TwilioWebhookOptions;
  /** The carrier's media streams: one websocket per call leg. */
  mediaStreams: MediaStreamOptions;
  /** The room page and the room websocket. */
  rooms: RoomRoutesOptions;
  /** The WebRTC offer endpoint of rooms (Pipecat's SmallWebRTC transport). */
  webrtc: WebRtcRoutesOptions;
}

/**
 * Every route of the service, in one place. The OpenAPI plugin comes first: it documents the
 * routes registered after it, each from the zod schemas it validates with.
 */
export async function registerRoutes(app: FastifyInstance, deps: RouteDeps): Promise<void> {
  app.addHook('onRoute', documentFrameworkErrors);
  // Not encapsulated: the document plugin must see every route of the app.
  await openApiRoutes(app, { version: deps.operator.version });
  await app.register(operatorRoutes, deps.operator);

  startBotCors(app, deps.corsOrigins);
  await app.register(
    async (v1) => {
      // The API speaks JSON only; without this, Fastify's built-in text/plain parser would accept text.
      v1.removeContentTypeParser('text/plain');
      requireApiKey(v1, deps.auth);
      await v1.register(botConfigRoutes, deps.botConfigs);
      await v1.register(phoneNumberRoutes, deps.phoneNumbers);
      await v1.register(domainRoutes, deps.domain);
      await v1.register(recordingRoutes, deps.recordings);
      await v1.register(callRoutes, deps.calls);
      await v1.register(botStartRoutes, deps.botStart);
    },
    { prefix: API_PREFIX },
  );

  await app.register(twilioWebhookRoutes, deps.webhooks);
  await app.register(recordingDownloadRoutes, deps.recordings);
  await app.register(webrtcRoutes, deps.webrtc);
  await app.register(callsPageRoutes);
  // The websocket plugin is registered once, in app.ts; both kinds of socket share its upgrade handler.
  await app.register(async (sockets) => {
    await mediaStreamRoutes(sockets, deps.mediaStreams);
    await sockets.register(roomRoutes, deps.rooms);
  });
}
