import type { Logger } from 'pino';
import type { BotConfigForCall, BotConfigService } from '../bots/bot-config-service.js';
import type { AccountCalls } from '../cluster/account-calls.js';
import type { DialoutService } from '../dialout/dialout-service.js';
import { type LiveCalls, SHUTDOWN_REASON } from '../lifecycle/live-calls.js';
import { startBot } from '../lifecycle/start-bot.js';
import { type CallSessionDeps, PHRASES } from '../pipeline/call-deps.js';
import type { RecordingsService } from '../recordings/recordings-service.js';
import type { CallRecordsService } from '../records/call-records-service.js';
import type { RoomManager } from '../rooms/room-manager.js';
import { ApiError } from '../shared/api-error.js';
import { CLOSE } from '../shared/close-codes.js';
import type { TwilioTransport } from '../telephony/twilio-transport.js';

export interface PhoneCallsOptions {
  configs: BotConfigService;
  /** What every call's session needs but its log; the call's own logger is added per call. */
  session: Omit<CallSessionDeps, 'log'>;
  /** Every call is registered here; while the server drains, new calls are refused. */
  liveCalls: LiveCalls;
  /** The account's concurrent calls (SWITCHBOARD_ACCOUNT_MAX_CALLS); a phone call is one. */
  accountCalls: AccountCalls;
  /** A bot with dialout_settings talks in a room, so the people it dials can join the call. */
  rooms: RoomManager;
  dialout: DialoutService;
  /** Records calls whose configuration has recording_settings.type = "cloud". */
  recordings?: RecordingsService;
  /** Every call gets a record. */
  records?: CallRecordsService;
}

/**
 * A carrier's call to a bot configuration, from the moment its media stream is accepted: what
 * `RoomManager.start` is for rooms. The route only adapts the socket (and checks the carrier's
 * signature); everything that decides whether and how the call runs is here.
 */
export class PhoneCalls {
  constructor(private readonly opts: PhoneCallsOptions) {}

  /**
   * Runs the call of configuration `configId` on `transport`, or closes the transport with the
   * code that says why not: the server is draining, no such configuration, the account is at its
   * call limit, or the call could not start.
   */
  start(configId: string, transport: TwilioTransport, log: Logger): void {
    if (this.opts.liveCalls.isDraining) {
      log.info('media stream refused: the server is shutting down');
      transport.close(CLOSE.goingAway, SHUTDOWN_REASON);
      return;
    }
    this.run(configId, transport, log).catch((err: unknown) => {
      log.error({ err }, 'could not start the call');
      transport.close(CLOSE.internalError, 'internal error');
    });
  }

  private async run(configId: string, transport: TwilioTransport, log: Logger): Promise<void> {
    const config = await this.opts.configs.loadForCall(configId);
    if (!config) {
      log.info('media stream for an unknown bot configuration');
      transport.close(CLOSE.notFound, 'unknown bot configuration');
      return;
    }
    let releaseCall: () => void;
    try {
      releaseCall = await this.opts.accountCalls.take(config.accountId);
    } catch (err) {
      if (!(err instanceof ApiError)) throw err;
      log.info({ why: err.info }, 'media stream refused: the account is at its call limit');
      transport.close(CLOSE.tryAgainLater, 'the account is at its limit of concurrent calls');
      return;
    }
    if ((config.body.dialout_settings ?? []).length > 0) {
      return this.callWithDialout(config, transport, log, releaseCall).catch((err: unknown) => {
        releaseCall();
        throw err;
      });
    }
    transport.whenEnded(releaseCall);
    // The recording starts with the stream, so the audio held during set-up lands where it was spoken.
    const recorder = this.opts.recordings?.startForCall(config, log, transport.openedAtMs);
    try {
      const record = this.opts.records?.begin({ kind: 'phone', config, recordingId: recorder?.recordingId, log });
      const bot = startBot(transport, config, { ...this.opts.session, log }, recorder, record);
      transport.attach(bot.handler);
      transport.whenEnded(
        this.opts.liveCalls.add({
          endWithGoodbye: () => bot.endWithGoodbye(SHUTDOWN_REASON, CLOSE.goingAway, PHRASES.shutdown),
          endNow: () => transport.close(CLOSE.goingAway, SHUTDOWN_REASON),
        }),
      );
    } catch (err) {
      void recorder?.finish();
      throw err;
    }
  }

  /**
   * The caller, the bot and everyone in dialout_settings in one room: the caller joins when the
   * stream starts, the bot greets them, and each callee joins when they answer. Targets that are no
   * longer valid (a caller id released since the configuration was written) are logged and skipped.
   */
  private async callWithDialout(
    config: BotConfigForCall,
    transport: TwilioTransport,
    log: Logger,
    releaseCall: () => void,
  ): Promise<void> {
    const plans = await this.opts.dialout
      .plan(config.accountId, config.body.dialout_settings ?? [], 1)
      .catch((err: unknown) => {
        log.error({ err }, 'dial-out targets are no longer valid; the call goes on without them');
        return [];
      });
    const name = await this.opts.rooms.reserve();
    const { room } = this.opts.rooms.start(name, { config, vision: false, onClosed: releaseCall });
    log.info({ room: room.name, targets: plans.length }, 'telephony call in a room, dialling out');
    room.addPhoneLeg(transport, 'caller', true);
    this.opts.dialout.start(room, plans);
  }
}
