import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { z } from 'zod';
import type { BotConfigForCall, BotConfigService } from '../bots/bot-config-service.js';
import type { AccountCalls } from '../cluster/account-calls.js';
import type { Coordinator, HeldKind } from '../cluster/coordinator.js';
import { relaySocket, wasForwarded } from '../cluster/forward.js';
import { ApiError } from '../shared/api-error.js';
import { websocketBase } from '../config/env.js';
import type { DialinCalls } from '../dialin/dialin-calls.js';
import type { DialoutService } from '../dialout/dialout-service.js';
import { type LiveCalls, SHUTDOWN_REASON } from '../lifecycle/live-calls.js';
import type { RoomManager } from '../rooms/room-manager.js';
import { startBot } from '../lifecycle/start-bot.js';
import { type CallSessionDeps, PHRASES } from '../pipeline/call-deps.js';
import type { RecordingsService } from '../recordings/recordings-service.js';
import { CLOSE } from '../telephony/twilio-messages.js';
import { isValidTwilioSignature } from '../telephony/twilio-signature.js';
import { TwilioTransport } from '../telephony/twilio-transport.js';

export interface MediaStreamOptions {
  service: BotConfigService;
  session: Omit<CallSessionDeps, 'log'>;
  publicUrl: string;
  /** When set, the upgrade request must carry a valid X-Twilio-Signature. */
  authToken?: string;
  /** Pinless dial-in calls waiting for a bot; their streams come to /ws/dialin/:callId. */
  dialinCalls: DialinCalls;
  /** Answered dial-out legs; their streams come to /ws/dialout/:legId and join their rooms. */
  dialout: DialoutService;
  /** A telephony bot with dialout_settings talks in a room, so the people it dials can join the call. */
  rooms: RoomManager;
  /** Records calls whose configuration has recording_settings.type = "cloud". */
  recordings?: RecordingsService;
  /** Every call is registered here; while the server drains, new streams are refused. */
  liveCalls: LiveCalls;
  /** A dial-in caller's or dial-out leg's stream that lands on another node than its own is relayed there. */
  cluster: Coordinator;
  /** The account's concurrent calls (SWITCHBOARD_ACCOUNT_MAX_CALLS); a phone call is one. */
  accountCalls: AccountCalls;
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
  /**
   * A stream for a leg the service already knows (a dial-in caller on hold, an answered dial-out
   * callee): signature first, then `connect` hands it over, or it is closed as unknown.
   */
  function knownLegRoute(
    path: string,
    what: string,
    logKey: string,
    connect: (id: string, transport: TwilioTransport) => boolean,
    /** Whether this node has the leg, registered in the cluster as `kind`; when it does not, the node that does gets the stream. */
    holds: (id: string) => boolean,
    kind: HeldKind,
  ): void {
    const schema = socketDoc(`Media stream of a ${what}`);
    app.get<{ Params: { id: string } }>(path, { websocket: true, schema }, (socket, request) => {
      const log = request.log.child({ [logKey]: request.params.id }) as Logger;
      if (opts.cluster.clustered && !holds(request.params.id) && !wasForwarded(request)) {
        relaySocket(socket, request, {
          fromNodeId: opts.cluster.nodeId,
          log,
          target: opts.cluster
            .holderOf(kind, request.params.id)
            .then((holder) => (holder && !holder.self ? holder.url : undefined)),
          onNowhere: () => {
            log.info(`media stream for an unknown or finished ${what}`);
            new TwilioTransport(socket, log).close(CLOSE.unknownConfig, `unknown or finished ${what}`);
          },
        });
        return;
      }
      const transport = new TwilioTransport(socket, log, undefined, request.raw.socket);
      if (!signatureValid(request.url, request.headers['x-twilio-signature'])) {
        log.warn(`${what} media stream signature rejected`);
        transport.close(CLOSE.policyViolation, 'invalid X-Twilio-Signature');
        return;
      }
      if (!connect(request.params.id, transport)) {
        log.info(`media stream for an unknown or finished ${what}`);
        transport.close(CLOSE.unknownConfig, `unknown or finished ${what}`);
      }
    });
  }

  knownLegRoute(
    '/ws/dialin/:id',
    'dial-in call',
    'callId',
    (id, transport) => opts.dialinCalls.connect(id, transport),
    (id) => opts.dialinCalls.holds(id),
    'dialin',
  );
  knownLegRoute(
    '/ws/dialout/:id',
    'dial-out leg',
    'dialoutLeg',
    (id, transport) => opts.dialout.connect(id, transport),
    (id) => opts.dialout.holds(id),
    'dialout',
  );

  /**
   * The caller, the bot and everyone in dialout_settings in one room: the caller joins when the
   * stream starts, the bot greets them, and each callee joins when they answer. Targets that are no
   * longer valid (a caller id released since the configuration was written) are logged and skipped.
   */
  async function callWithDialout(
    config: BotConfigForCall,
    transport: TwilioTransport,
    log: Logger,
    releaseCall: () => void,
  ): Promise<void> {
    const plans = await opts.dialout
      .plan(config.accountId, config.body.dialout_settings ?? [], 1)
      .catch((err: unknown) => {
        log.error({ err }, 'dial-out targets are no longer valid; the call goes on without them');
        return [];
      });
    const name = await opts.rooms.reserve();
    const { room } = opts.rooms.start(name, { config, vision: false, onClosed: releaseCall });
    log.info({ room: room.name, targets: plans.length }, 'telephony call in a room, dialling out');
    room.addPhoneLeg(transport, 'caller', true);
    opts.dialout.start(room, plans);
  }

  /** The carrier signs the wss:// URL of the upgrade, without query parameters. */
  function signatureValid(requestUrl: string, signature: string | string[] | undefined): boolean {
    if (!opts.authToken) return true;
    const url = websocketBase(opts.publicUrl) + requestUrl.split('?')[0];
    return isValidTwilioSignature(opts.authToken, typeof signature === 'string' ? signature : undefined, url, {});
  }

  app.get<{ Params: { id: string } }>(
    '/ws/twilio/:id',
    { websocket: true, schema: socketDoc("A configuration's wssUrl") },
    (socket, request) => {
      // Fastify's logger is the process's pino instance (buildApp passes it in), typed more narrowly.
      const log = request.log.child({ botConfigId: request.params.id }) as Logger;
      // Listeners first: the carrier sends `connected` and `start` right after the upgrade.
      const transport = new TwilioTransport(socket, log, undefined, request.raw.socket);

      if (!signatureValid(request.url, request.headers['x-twilio-signature'])) {
        log.warn('media stream signature rejected');
        transport.close(CLOSE.policyViolation, 'invalid X-Twilio-Signature');
        return;
      }
      if (opts.liveCalls.isDraining) {
        log.info('media stream refused: the server is shutting down');
        transport.close(CLOSE.goingAway, SHUTDOWN_REASON);
        return;
      }

      opts.service
        .loadForCall(request.params.id)
        .then(async (config) => {
          if (!config) {
            log.info('media stream for an unknown bot configuration');
            transport.close(CLOSE.unknownConfig, 'unknown bot configuration');
            return;
          }
          let releaseCall: () => void;
          try {
            releaseCall = await opts.accountCalls.take(config.accountId);
          } catch (err) {
            if (!(err instanceof ApiError)) throw err;
            log.info({ why: err.info }, 'media stream refused: the account is at its call limit');
            transport.close(CLOSE.tryAgainLater, 'the account is at its limit of concurrent calls');
            return;
          }
          if ((config.body.dialout_settings ?? []).length > 0) {
            return callWithDialout(config, transport, log, releaseCall).catch((err: unknown) => {
              releaseCall();
              throw err;
            });
          }
          transport.whenEnded(releaseCall);
          const recorder = opts.recordings?.startForCall(config, log);
          try {
            const bot = startBot(transport, config, { ...opts.session, log }, recorder);
            transport.attach(bot.handler);
            transport.whenEnded(
              opts.liveCalls.add({
                endWithGoodbye: () => bot.endWithGoodbye(SHUTDOWN_REASON, CLOSE.goingAway, PHRASES.shutdown),
                endNow: () => transport.close(CLOSE.goingAway, SHUTDOWN_REASON),
              }),
            );
          } catch (err) {
            void recorder?.finish();
            throw err;
          }
        })
        .catch((err: unknown) => {
          log.error({ err }, 'could not start the call');
          transport.close(CLOSE.internalError, 'internal error');
        });
    },
  );
}
