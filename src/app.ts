import websocket from '@fastify/websocket';
import type { FastifyInstance } from 'fastify';
import { AccountCalls } from './cluster/account-calls.js';
import type { Coordinator } from './cluster/coordinator.js';
import { createCoordinator, nodeUrlOf } from './cluster/create-coordinator.js';
import type { AppConfig } from './config/env.js';
import { Forwarding } from './http/forwarding.js';
import { registerRoutes } from './http/routes.js';
import { WebRtcPeers } from './rooms/webrtc/webrtc-peers.js';
import { LiveCalls } from './lifecycle/live-calls.js';
import type { Logger } from './observability/logger.js';
import { ServiceMetrics } from './observability/metrics.js';
import { type CallRuntime, defaultRuntime } from './runtime.js';
import { webhookAddressPolicy } from './security/address-policy.js';
import type { OpenedDatabase } from './store/database.js';
import { dataDirId } from './store/data-dir-id.js';
import type { SandboxCallee } from './telephony/carrier/sandbox-call.js';
import { VERSION } from './version.js';
import { buildAccounts } from './wiring/accounts.js';
import { buildCalls } from './wiring/calls.js';
import { createHttpServer } from './wiring/http-server.js';
import { buildRecordings } from './wiring/recordings.js';
import { buildRecords } from './wiring/records.js';
import { PageTokens } from './http/calls-page-token.js';
import { UrlSigner } from './security/url-signer.js';
import { buildTelephony } from './wiring/telephony.js';
import { warmCallPartsWhenNeeded } from './wiring/warm-up.js';

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

/** Largest websocket message accepted; a 20 ms media frame is about 300 bytes of JSON. */
const MAX_WEBSOCKET_MESSAGE_BYTES = 64 * 1024;

/**
 * Builds the whole HTTP surface. Never listens: the CLI does, and tests inject or listen on port 0.
 * Each part is made by its builder in `wiring/`; here they are connected, in the order start-up needs.
 */
export async function buildApp(deps: AppDeps): Promise<FastifyInstance> {
  const { config, database, logger: log } = deps;
  const runtime = deps.runtime ?? defaultRuntime();
  const metrics = deps.metrics ?? new ServiceMetrics();
  const liveCalls = deps.liveCalls ?? new LiveCalls();
  runtime.playoutClock.onTickLag = (lagMs) => metrics.observePlayoutTickLag(lagMs);
  const nodeId = dataDirId(config.dataDir);
  metrics.setNodeId(nodeId);
  const cluster = deps.cluster ?? (await createCoordinator(config, nodeId, log));
  const accountCalls = new AccountCalls(cluster, config.accountMaxCalls);
  const webhookPolicy = webhookAddressPolicy(config.webhookAllowLinkLocal);

  const app = createHttpServer(config, log);
  const { keys, secrets, accounts, auth, botConfigsRepo, botConfigs } = await buildAccounts(config, database, log);
  await warmCallPartsWhenNeeded(app, runtime.warm, botConfigsRepo, log);
  const { sandboxCallee } = deps;
  const telephony = await buildTelephony({
    config,
    database,
    secrets,
    runtime,
    cluster,
    liveCalls,
    metrics,
    webhookPolicy,
    sandboxCallee,
    log,
  });
  const { pinless, dialinCalls, dialout } = telephony;
  const recorded = await buildRecordings({ config, database, nodeId, keys, cluster, log, clock: runtime.clock });
  const { recordings } = recorded;
  const recordedCalls = await buildRecords({
    config,
    database,
    nodeId,
    cluster,
    metrics,
    webhookPolicy,
    log,
    clock: runtime.clock,
  });
  const { records } = recordedCalls;
  app.addHook('onClose', async () => {
    keys.secretRing.stop();
    await recorded.close();
    await recordedCalls.close();
    await cluster.close();
  });
  const { carrier } = telephony;
  const { rooms, phoneCalls } = buildCalls({
    config,
    runtime,
    metrics,
    keys,
    cluster,
    liveCalls,
    accountCalls,
    recordings,
    records,
    botConfigs,
    carrier,
    dialout,
    log,
  });

  const webrtcPeers = new WebRtcPeers({
    rooms,
    network: { publicIp: config.webrtc.publicIp, udpPortRange: config.webrtc.udpPortRange },
    maxPeers: config.rooms.maxRooms * config.rooms.maxParticipants,
    log,
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

  const { publicUrl, env } = config;
  const { authToken } = config.twilio;
  const forwarding = new Forwarding(cluster);
  // The calls page's signed links are signed with the key of the recordings' download links.
  const linkSigner = new UrlSigner(keys.linkSigning);
  await registerRoutes(app, {
    auth: { ...auth, pageTokens: new PageTokens(linkSigner) },
    corsOrigins: config.corsOrigins,
    operator: { database, liveCalls, metrics, metricsToken: config.metricsToken, version: VERSION, cluster },
    botConfigs: { service: botConfigs, registry: runtime.registry, env, dialout, webhookPolicy },
    phoneNumbers: { service: telephony.phoneNumbers },
    domain: { service: pinless },
    recordings: { service: recordings, forwarding },
    calls: { service: records, signer: linkSigner, publicUrl },
    botStart: {
      rooms,
      registry: runtime.registry,
      env,
      publicUrl,
      dialinCalls,
      dialout,
      forwarding,
      accountCalls,
      webhookPolicy,
      iceServers: config.webrtc.iceServers,
    },
    webhooks: {
      service: botConfigs,
      accounts,
      publicUrl,
      authToken,
      dialin: { config: pinless, calls: dialinCalls },
      dialout,
      forwarding,
      liveCalls,
    },
    mediaStreams: { phoneCalls, dialinCalls, dialout, publicUrl, authToken, forwarding, clock: runtime.clock },
    rooms: { rooms, liveCalls, cluster, forwarding },
    webrtc: { peers: webrtcPeers, tokens: rooms.tokens, liveCalls, forwarding, corsOrigins: config.corsOrigins },
  });

  return app;
}
