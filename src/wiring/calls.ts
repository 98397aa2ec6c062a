import type { BotConfigService } from '../bots/bot-config-service.js';
import { PhoneCalls } from '../calls/phone-calls.js';
import type { AccountCalls } from '../cluster/account-calls.js';
import type { Coordinator } from '../cluster/coordinator.js';
import type { AppConfig } from '../config/env.js';
import type { DialoutService } from '../dialout/dialout-service.js';
import type { LiveCalls } from '../lifecycle/live-calls.js';
import type { Logger } from '../observability/logger.js';
import type { ServiceMetrics } from '../observability/metrics.js';
import type { CallSessionDeps } from '../pipeline/call-deps.js';
import type { RecordingsService } from '../recordings/recordings-service.js';
import type { CallRecordsService } from '../records/call-records-service.js';
import { RoomManager } from '../rooms/room-manager.js';
import { RoomTokens } from '../rooms/room-tokens.js';
import type { ServiceKeys } from '../security/service-keys.js';
import type { Carrier } from '../telephony/carrier/carrier.js';
import { webhookAddressPolicy } from '../security/address-policy.js';

/** The parts of the call runtime (`runtime.ts`) every session runs on. */
export type SessionRuntime = Pick<CallSessionDeps, 'registry' | 'createVad' | 'fallbackTts' | 'clock' | 'playoutClock'>;

/** What every call's session runs on, but its log: the runtime's parts and the deployment's settings. */
export function sessionDeps(
  runtime: SessionRuntime,
  config: AppConfig,
  metrics: ServiceMetrics,
): Omit<CallSessionDeps, 'log'> {
  return {
    ...runtime,
    env: config.env,
    observer: metrics,
    turnDeadlineMs: config.turnDeadlineSecs * 1000,
    // Function webhooks go where dial-in webhooks may.
    webhookPolicy: webhookAddressPolicy(config.webhookAllowLinkLocal),
  };
}

export interface CallsDeps {
  config: AppConfig;
  runtime: SessionRuntime;
  metrics: ServiceMetrics;
  keys: ServiceKeys;
  cluster: Coordinator;
  liveCalls: LiveCalls;
  accountCalls: AccountCalls;
  recordings: RecordingsService;
  records: CallRecordsService;
  botConfigs: BotConfigService;
  carrier: Carrier;
  dialout: DialoutService;
  log: Logger;
}

/** Where bots run: rooms (browsers, Pipecat clients, phone legs) and phone calls to a configuration. */
export function buildCalls(deps: CallsDeps): { rooms: RoomManager; phoneCalls: PhoneCalls } {
  const { config } = deps;
  const session = sessionDeps(deps.runtime, config, deps.metrics);
  const rooms = new RoomManager({
    tokens: new RoomTokens(deps.keys.roomToken),
    maxRooms: config.rooms.maxRooms,
    cluster: deps.cluster,
    limits: {
      maxParticipants: config.rooms.maxParticipants,
      joinTimeoutMs: config.rooms.joinTimeoutSecs * 1000,
      emptyGraceMs: config.rooms.emptyGraceSecs * 1000,
      idleTimeoutMs: config.rooms.idleTimeoutSecs * 1000,
    },
    session,
    recordings: deps.recordings,
    records: deps.records,
    liveCalls: deps.liveCalls,
    log: deps.log,
  });
  const phoneCalls = new PhoneCalls({
    configs: deps.botConfigs,
    session: {
      ...session,
      // A call our side ends is ended at the carrier too (a live call: 'answered').
      hangUp: (callSid) => deps.carrier.hangUp(callSid, 'answered'),
      // transfer_call: a cold transfer at the carrier.
      transfer: (callSid, target) => deps.carrier.transfer(callSid, target),
      transferRefusal: (target) => deps.carrier.refusal(target),
    },
    liveCalls: deps.liveCalls,
    accountCalls: deps.accountCalls,
    rooms,
    dialout: deps.dialout,
    recordings: deps.recordings,
    records: deps.records,
  });
  return { rooms, phoneCalls };
}
