import websocket from '@fastify/websocket';
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import { BotConfigService } from './bots/bot-config-service.js';
import type { AppConfig } from './config/env.js';
import { errorHandler, sendError, toApiError } from './http/errors.js';
import { ApiError } from './shared/api-error.js';
import { registerRoutes } from './http/routes.js';
import { zodSerializerCompiler, zodValidatorCompiler } from './http/zod-compilers.js';
import type { Logger } from './observability/logger.js';
import { ServiceMetrics } from './observability/metrics.js';
import { webhookAddressPolicy } from './security/address-policy.js';
import { hashApiKey } from './store/api-key-hash.js';
import { SecretBox } from './security/secret-box.js';
import { loadServiceKeys } from './security/service-keys.js';
import { AccountsRepo, DEFAULT_ACCOUNT_NAME } from './store/accounts-repo.js';
import { BotConfigsRepo } from './store/bot-configs-repo.js';
import { PhoneNumbersRepo } from './store/phone-numbers-repo.js';
import { createCarrier } from './telephony/carrier/create-carrier.js';
import type { SandboxCallee } from './telephony/carrier/sandbox-call.js';
import { PhoneNumberService } from './telephony/phone-number-service.js';
import { buildStreamTwiml } from './telephony/twiml.js';
import { PinlessConfigService } from './dialin/pinless-config.js';
import { DialinCalls } from './dialin/dialin-calls.js';
import { HoldMusic } from './dialin/hold-music.js';
import { DialoutService } from './dialout/dialout-service.js';
import { DialinConfigsRepo } from './store/dialin-configs-repo.js';
import { LiveCalls } from './lifecycle/live-calls.js';
import type { OpenedDatabase } from './store/database.js';
import { type CallRuntime, defaultRuntime } from './runtime.js';
import { BucketStorage } from './recordings/bucket-storage.js';
import { RecordingsService } from './recordings/recordings-service.js';
import { UrlSigner } from './security/url-signer.js';
import { RecordingsRepo } from './store/recordings-repo.js';
import { dataDirId } from './store/data-dir-id.js';
import { VERSION } from './version.js';
import { RoomManager } from './rooms/room-manager.js';
import { AccountCalls } from './cluster/account-calls.js';
import type { Coordinator } from './cluster/coordinator.js';
import { createCoordinator, nodeUrlOf } from './cluster/create-coordinator.js';
import { RoomTokens } from './rooms/room-tokens.js';
import { WebRtcPeers } from './rooms/webrtc/webrtc-peers.js';

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
  /** Answers the sandbox carrier's outbound calls: a development tool, plugged in by the CLI. */
  sandboxCallee?: SandboxCallee;
  /** What the nodes agree on; by default from REDIS_URL (in process without it). Closed with the app. */
  cluster?: Coordinator;
}

/** Longest path parameter the router passes to a route; longer ones are a 400. */
const MAX_PATH_PARAM_CHARS = 256;

/** Largest websocket message accepted; a 20 ms media frame is about 300 bytes of JSON. */
const MAX_WEBSOCKET_MESSAGE_BYTES = 64 * 1024;

/** Requests that never lead to a call: health checks, metrics scrapes, the API's documentation. */
const MONITORING_PATH = /^\/(healthz|metrics|openapi\.json|docs)(?:[/?]|$)/;

/** Builds the whole HTTP surface. Never listens: the CLI does, and tests inject or listen on port 0. */
export async function buildApp(deps: AppDeps): Promise<FastifyInstance> {
  const { config, database } = deps;
  const runtime = deps.runtime ?? defaultRuntime();
  const metrics = deps.metrics ?? new ServiceMetrics();
  const liveCalls = deps.liveCalls ?? new LiveCalls();
  runtime.clock.onTickLag = (lagMs) => metrics.observePlayoutTickLag(lagMs);
  const nodeId = dataDirId(config.dataDir);
  metrics.setNodeId(nodeId);
  const cluster = deps.cluster ?? (await createCoordinator(config, nodeId, deps.logger as Logger));
  const accountCalls = new AccountCalls(cluster, config.accountMaxCalls);
  const app = Fastify({
    loggerInstance: deps.logger as FastifyBaseLogger,
    bodyLimit: config.bodyLimitBytes,
    return503OnClosing: true,
    // Ids longer than this never reach a route's schema (which allows 128); the router refuses them.
    routerOptions: { maxParamLength: MAX_PATH_PARAM_CHARS },
    // Errors the router raises before any route runs (a malformed URL, an over-long path parameter)
    // get the same envelope as every other error.
    frameworkErrors: (error, _request, reply) => sendError(reply, toApiError(error)),
  });

  // The deployment's keys: every node on one PostgreSQL store loads the same ones.
  const keys = await loadServiceKeys(config, database);
  const secrets = new SecretBox(keys.secret);
  const accounts = new AccountsRepo(database.db);
  const defaultAccount = await accounts.ensureAccount(DEFAULT_ACCOUNT_NAME);
  const botConfigsRepo = new BotConfigsRepo(database.db);
  const botConfigs = new BotConfigService(botConfigsRepo, secrets, config.publicUrl, buildStreamTwiml);
  // What calls need (the VAD model, the offline voice) loads in the background once calls may
  // come: now if a configuration is stored, else on the first request that is not monitoring.
  const warmCallParts = () => runtime.warm?.(deps.logger as Logger);
  if (await botConfigsRepo.hasAny()) warmCallParts();
  else {
    app.addHook('onRequest', async (request) => {
      if (!MONITORING_PATH.test(request.url)) warmCallParts();
    });
  }
  const phoneNumbersRepo = new PhoneNumbersRepo(database.db);
  const pinless = new PinlessConfigService(
    new DialinConfigsRepo(database.db),
    phoneNumbersRepo,
    secrets,
    `sip.${new URL(config.publicUrl).hostname}`,
    webhookAddressPolicy(config.webhookAllowLinkLocal),
    deps.logger as Logger,
  );
  const carrier = await createCarrier(config, phoneNumbersRepo, deps.logger as Logger, deps.sandboxCallee);
  const phoneNumbers = new PhoneNumberService(phoneNumbersRepo, carrier, `${config.publicUrl}/twilio/voice`);
  const dialout = new DialoutService({
    carrier,
    numbers: phoneNumbersRepo,
    publicUrl: config.publicUrl,
    ringTimeoutSecs: config.dialoutRingTimeoutSecs,
    maxParticipants: config.rooms.maxParticipants,
    log: deps.logger as Logger,
    cluster,
    metrics,
  });

  const bucketStorage = new BucketStorage(config.env);
  const recordings = new RecordingsService({
    repo: new RecordingsRepo(database.db),
    dataDir: config.dataDir,
    nodeId,
    publicUrl: config.publicUrl,
    signer: new UrlSigner(keys.linkSigning),
    bucketStorage,
    log: deps.logger as Logger,
  });
  // Recordings a dead process left in progress are finalised before any new call starts.
  await recordings.recoverInterrupted();
  // The node that reaps a dead one closes the recordings it left in progress.
  cluster.onNodeDead((deadNodeId) => {
    recordings
      .abandonNode(deadNodeId)
      .catch((err: unknown) =>
        deps.logger.error({ err, deadNode: deadNodeId }, 'could not close a dead node’s recordings'),
      );
  });
  app.addHook('onClose', async () => {
    await recordings.drain();
    bucketStorage.close();
    await cluster.close();
  });

  // Routes declare zod schemas; these run them (errors in the API's envelope) and check answers.
  app.setValidatorCompiler(zodValidatorCompiler);
  app.setSerializerCompiler(zodSerializerCompiler);
  app.setErrorHandler(errorHandler);
  app.setNotFoundHandler((request, reply) =>
    sendError(reply, new ApiError('not-found', `no route ${request.method} ${request.url.split('?')[0]}`)),
  );

  const dialinCalls = new DialinCalls({
    clock: runtime.clock,
    fallbackTts: runtime.fallbackTts,
    policy: webhookAddressPolicy(config.webhookAllowLinkLocal),
    holdTimeoutMs: config.dialinHoldTimeoutSecs * 1000,
    holdMusic: new HoldMusic(webhookAddressPolicy(config.webhookAllowLinkLocal), deps.logger as Logger),
    liveCalls,
    cluster,
    log: deps.logger as Logger,
  });

  const rooms = new RoomManager({
    tokens: new RoomTokens(keys.roomToken),
    maxRooms: config.rooms.maxRooms,
    cluster,
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
  const webrtcPeers = new WebRtcPeers({
    rooms,
    network: { publicIp: config.webrtc.publicIp, udpPortRange: config.webrtc.udpPortRange },
    maxPeers: config.rooms.maxRooms * config.rooms.maxParticipants,
    log: deps.logger as Logger,
  });
  // Closing the app ends whatever calls are still live, each closed with 1001 "going away".
  // Added before the websocket plugin, so it runs before that plugin closes the sockets without a code.
  app.addHook('preClose', async () => liveCalls.endAllNow());
  // Joins the cluster once listening (a node that is only injected into, as in tests, never does).
  app.addHook('onListen', async () => {
    await cluster.start(nodeUrlOf(config, app.listeningOrigin), () => ({
      draining: liveCalls.isDraining,
      liveCalls: liveCalls.count,
      rooms: rooms.openRooms,
    }));
  });
  // One websocket plugin for the whole app: media streams and room sockets share its upgrade handler.
  await app.register(websocket, { options: { maxPayload: MAX_WEBSOCKET_MESSAGE_BYTES } });

  const { authToken } = config.twilio;
  await registerRoutes(app, {
    auth: { accounts, defaultAccount, envKeyHashes: new Set(config.envApiKeys.map(hashApiKey)) },
    corsOrigins: config.corsOrigins,
    operator: { database, liveCalls, metrics, metricsToken: config.metricsToken, version: VERSION, cluster },
    botConfigs: { service: botConfigs, registry: runtime.registry, env: config.env, dialout },
    phoneNumbers: { service: phoneNumbers },
    domain: { service: pinless },
    recordings: { service: recordings, cluster },
    botStart: {
      rooms,
      registry: runtime.registry,
      env: config.env,
      publicUrl: config.publicUrl,
      dialinCalls,
      dialout,
      cluster,
      accountCalls,
      iceServers: config.webrtc.iceServers,
    },
    webhooks: {
      service: botConfigs,
      accounts,
      publicUrl: config.publicUrl,
      authToken: config.twilio.authToken,
      dialin: { config: pinless, calls: dialinCalls },
      dialout,
      cluster,
      liveCalls,
    },
    mediaStreams: {
      dialinCalls,
      dialout,
      rooms,
      recordings,
      liveCalls,
      cluster,
      accountCalls,
      service: botConfigs,
      publicUrl: config.publicUrl,
      authToken,
      session: {
        ...runtime,
        env: config.env,
        observer: metrics,
        turnDeadlineMs: config.turnDeadlineSecs * 1000,
        // A call our side ends is ended at the carrier too (a live call: 'answered').
        hangUp: (callSid) => carrier.hangUp(callSid, 'answered'),
      },
    },
    rooms: { rooms, liveCalls, cluster },
    webrtc: { peers: webrtcPeers, tokens: rooms.tokens, liveCalls, cluster, corsOrigins: config.corsOrigins },
  });

  return app;
}
