import { timingSafeEqual } from 'node:crypto';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import { BotConfigService } from './bots/bot-config-service.js';
import type { AppConfig } from './config/env.js';
import { requireApiKey } from './http/auth.js';
import { botConfigRoutes } from './http/bot-config-routes.js';
import { ApiError, errorHandler, sendError } from './http/errors.js';
import { buildOpenApiDocument } from './http/openapi.js';
import { twilioWebhookRoutes } from './http/twilio-webhook-routes.js';
import type { Logger } from './observability/logger.js';
import { ServiceMetrics } from './observability/metrics.js';
import { webhookAddressPolicy } from './security/address-policy.js';
import { hashApiKey } from './security/api-key-hash.js';
import { SecretBox } from './security/secret-box.js';
import { loadServiceKeys } from './security/service-keys.js';
import { AccountsRepo, DEFAULT_ACCOUNT_NAME } from './store/accounts-repo.js';
import { BotConfigsRepo } from './store/bot-configs-repo.js';
import { PhoneNumbersRepo } from './store/phone-numbers-repo.js';
import { createCarrier } from './telephony/carrier/create-carrier.js';
import { PhoneNumberService } from './telephony/phone-number-service.js';
import { phoneNumberRoutes } from './http/phone-number-routes.js';
import { domainRoutes } from './http/domain-routes.js';
import { PinlessConfigService } from './dialin/pinless-config.js';
import { DialinCalls } from './dialin/dialin-calls.js';
import { HoldMusic } from './dialin/hold-music.js';
import { DialoutService } from './dialout/dialout-service.js';
import { DialinConfigsRepo } from './store/dialin-configs-repo.js';
import { LiveCalls } from './lifecycle/live-calls.js';
import type { OpenedDatabase } from './store/database.js';
import { type CallRuntime, defaultRuntime } from './runtime.js';
import { mediaStreamRoutes } from './telephony/media-stream-route.js';
import { recordingDownloadRoutes, recordingRoutes } from './http/recording-routes.js';
import { BucketStorage } from './recordings/bucket-storage.js';
import { RecordingsService } from './recordings/recordings-service.js';
import { startBotCors } from './http/start-bot-cors.js';
import { UrlSigner } from './security/url-signer.js';
import { RecordingsRepo } from './store/recordings-repo.js';
import { dataDirId } from './store/data-dir-id.js';
import { VERSION } from './version.js';
import { botStartRoutes } from './http/bot-start-routes.js';
import { RoomManager } from './rooms/room-manager.js';
import { roomRoutes } from './rooms/room-routes.js';
import { RoomTokens } from './rooms/room-tokens.js';

export interface AppDeps {
  config: AppConfig;
  database: OpenedDatabase;
  logger: Logger;
  /** Providers, VAD and clock for calls; tests pass scripted providers here. */
  runtime?: CallRuntime;
  /** What /metrics serves; one per app. */
  metrics?: ServiceMetrics;
  /** The calls in progress, and whether new ones are taken; the server drains through it on SIGTERM. */
  liveCalls?: LiveCalls;
}

/** Constant-time check of `Bearer <token>`. */
function bearerMatches(header: string | undefined, token: string): boolean {
  const presented = Buffer.from(header ?? '');
  const expected = Buffer.from(`Bearer ${token}`);
  return presented.length === expected.length && timingSafeEqual(presented, expected);
}

/** Builds the whole HTTP surface. Never listens: the CLI does, and tests inject or listen on port 0. */
export async function buildApp(deps: AppDeps): Promise<FastifyInstance> {
  const { config, database } = deps;
  const runtime = deps.runtime ?? defaultRuntime();
  const metrics = deps.metrics ?? new ServiceMetrics();
  const liveCalls = deps.liveCalls ?? new LiveCalls();
  runtime.clock.onTickLag = (lagMs) => metrics.observePlayoutTickLag(lagMs);
  const app = Fastify({
    loggerInstance: deps.logger as FastifyBaseLogger,
    bodyLimit: config.bodyLimitBytes,
    return503OnClosing: true,
  });

  // The deployment's keys: every node on one PostgreSQL store loads the same ones.
  const keys = await loadServiceKeys(config, database);
  const secrets = new SecretBox(keys.secret);
  const accounts = new AccountsRepo(database.db);
  const defaultAccount = await accounts.ensureAccount(DEFAULT_ACCOUNT_NAME);
  const botConfigs = new BotConfigService(new BotConfigsRepo(database.db), secrets, config.publicUrl);
  const phoneNumbersRepo = new PhoneNumbersRepo(database.db);
  const pinless = new PinlessConfigService(
    new DialinConfigsRepo(database.db),
    phoneNumbersRepo,
    secrets,
    `sip.${new URL(config.publicUrl).hostname}`,
    webhookAddressPolicy(config.webhookAllowLinkLocal),
    deps.logger as Logger,
  );
  const carrier = createCarrier(config, phoneNumbersRepo, deps.logger as Logger);
  const phoneNumbers = new PhoneNumberService(phoneNumbersRepo, carrier, `${config.publicUrl}/twilio/voice`);
  const dialout = new DialoutService({
    carrier,
    numbers: phoneNumbersRepo,
    publicUrl: config.publicUrl,
    ringTimeoutSecs: config.dialoutRingTimeoutSecs,
    maxParticipants: config.rooms.maxParticipants,
    log: deps.logger as Logger,
    metrics,
  });

  const bucketStorage = new BucketStorage(config.env);
  const recordings = new RecordingsService({
    repo: new RecordingsRepo(database.db),
    dataDir: config.dataDir,
    nodeId: dataDirId(config.dataDir),
    publicUrl: config.publicUrl,
    signer: new UrlSigner(keys.linkSigning),
    bucketStorage,
    log: deps.logger as Logger,
  });
  // Recordings a dead process left in progress are finalised before any new call starts.
  await recordings.recoverInterrupted();
  app.addHook('onClose', async () => {
    await recordings.drain();
    bucketStorage.close();
  });

  app.setErrorHandler(errorHandler);
  app.setNotFoundHandler((request, reply) =>
    sendError(reply, new ApiError('not-found', `no route ${request.method} ${request.url.split('?')[0]}`)),
  );

  app.get('/healthz', async (_request, reply) => {
    // A load balancer stops sending new calls here while the live ones finish.
    if (liveCalls.isDraining) return sendError(reply, new ApiError('service-unavailable', 'the server is shutting down'));
    if (!(await database.ping())) return sendError(reply, new ApiError('service-unavailable', 'the store is not usable'));
    return { status: 'ok', version: VERSION };
  });

  app.get('/metrics', async (request, reply) => {
    if (config.metricsToken && !bearerMatches(request.headers.authorization, config.metricsToken)) {
      return sendError(reply, new ApiError('authentication-error', 'GET /metrics needs Authorization: Bearer <SWITCHBOARD_METRICS_TOKEN>'));
    }
    reply.type(metrics.registry.contentType);
    return metrics.registry.metrics();
  });

  const document = buildOpenApiDocument(VERSION);
  await app.register(swagger, { mode: 'static', specification: { document: document as never } });
  await app.register(swaggerUi, { routePrefix: '/docs' });
  app.get('/openapi.json', async () => document);

  const dialinCalls = new DialinCalls({
    clock: runtime.clock,
    fallbackTts: runtime.fallbackTts,
    policy: webhookAddressPolicy(config.webhookAllowLinkLocal),
    holdTimeoutMs: config.dialinHoldTimeoutSecs * 1000,
    holdMusic: new HoldMusic(webhookAddressPolicy(config.webhookAllowLinkLocal), deps.logger as Logger),
    liveCalls,
    log: deps.logger as Logger,
  });

  const rooms = new RoomManager({
    tokens: new RoomTokens(keys.roomToken),
    maxRooms: config.rooms.maxRooms,
    limits: {
      maxParticipants: config.rooms.maxParticipants,
      joinTimeoutMs: config.rooms.joinTimeoutSecs * 1000,
      emptyGraceMs: config.rooms.emptyGraceSecs * 1000,
      idleTimeoutMs: config.rooms.idleTimeoutSecs * 1000,
    },
    session: { ...runtime, env: config.env, observer: metrics, turnDeadlineMs: config.turnDeadlineSecs * 1000 },
    recordings,
    liveCalls,
    log: deps.logger as Logger,
  });
  // Closing the app ends whatever calls are still live, each closed with 1001 "going away"
  // (before the websocket plugin closes the sockets without a code).
  app.addHook('preClose', async () => liveCalls.endAllNow());

  startBotCors(app, config.corsOrigins);
  await app.register(
    async (v1) => {
      // The API speaks JSON only; without this, Fastify's built-in text/plain parser would accept text.
      v1.removeContentTypeParser('text/plain');
      requireApiKey(v1, {
        accounts,
        defaultAccount,
        envKeyHashes: new Set(config.envApiKeys.map(hashApiKey)),
      });
      await v1.register(botConfigRoutes, { service: botConfigs, registry: runtime.registry, env: config.env, dialout });
      await v1.register(phoneNumberRoutes, { service: phoneNumbers });
      await v1.register(domainRoutes, { service: pinless });
      await v1.register(recordingRoutes, { service: recordings });
      await v1.register(botStartRoutes, { rooms, registry: runtime.registry, env: config.env, publicUrl: config.publicUrl, dialinCalls, dialout });
    },
    { prefix: '/v1' },
  );

  await app.register(twilioWebhookRoutes, {
    service: botConfigs,
    accounts,
    publicUrl: config.publicUrl,
    authToken: config.twilio.authToken,
    dialin: { config: pinless, calls: dialinCalls },
    dialout,
    liveCalls,
  });

  await app.register(recordingDownloadRoutes, { service: recordings });

  // mediaStreamRoutes registers the websocket plugin in the context it is given; the room routes
  // join that context, so one upgrade handler serves both kinds of socket.
  await app.register(async (sockets) => {
    await mediaStreamRoutes(sockets, {
      dialinCalls,
      dialout,
      rooms,
      recordings,
      liveCalls,
      service: botConfigs,
      publicUrl: config.publicUrl,
      authToken: config.twilio.authToken,
      session: {
        ...runtime,
        env: config.env,
        observer: metrics,
        turnDeadlineMs: config.turnDeadlineSecs * 1000,
        // A call our side ends is ended at the carrier too (a live call: 'answered').
        hangUp: (callSid) => carrier.hangUp(callSid, 'answered'),
      },
    });
    await sockets.register(roomRoutes, { rooms, liveCalls });
  });

  return app;
}
