import type { AppConfig } from '../config/env.js';
import type { Coordinator } from '../cluster/coordinator.js';
import { DialinCalls } from '../dialin/dialin-calls.js';
import { HoldMusic } from '../dialin/hold-music.js';
import { PinlessConfigService } from '../dialin/pinless-config.js';
import { DialoutService } from '../dialout/dialout-service.js';
import type { LiveCalls } from '../lifecycle/live-calls.js';
import type { Logger } from '../observability/logger.js';
import type { ServiceMetrics } from '../observability/metrics.js';
import type { CallSessionDeps } from '../pipeline/call-deps.js';
import type { AddressPolicy } from '../security/address-policy.js';
import type { SecretBox } from '../security/secret-box.js';
import type { OpenedDatabase } from '../store/database.js';
import { DialinConfigsRepo } from '../store/dialin-configs-repo.js';
import { PhoneNumbersRepo } from '../store/phone-numbers-repo.js';
import type { Carrier } from '../telephony/carrier/carrier.js';
import { createCarrier } from '../telephony/carrier/create-carrier.js';
import type { SandboxCallee } from '../telephony/carrier/sandbox-call.js';
import { PhoneNumberService } from '../telephony/phone-number-service.js';

export interface TelephonyDeps {
  config: AppConfig;
  database: OpenedDatabase;
  secrets: SecretBox;
  /** The playout clock and the offline voice: held callers hear hold music and messages through them. */
  runtime: Pick<CallSessionDeps, 'clock' | 'playoutClock' | 'fallbackTts'>;
  cluster: Coordinator;
  liveCalls: LiveCalls;
  metrics: ServiceMetrics;
  /** Which customer addresses webhooks and hold music may be fetched from. */
  webhookPolicy: AddressPolicy;
  sandboxCallee?: SandboxCallee;
  log: Logger;
}

export interface Telephony {
  carrier: Carrier;
  phoneNumbers: PhoneNumberService;
  /** Numbers with pinless dial-in, and the callers held on them until a bot takes the call. */
  pinless: PinlessConfigService;
  dialinCalls: DialinCalls;
  dialout: DialoutService;
}

/** The carrier and what talks to it: numbers, pinless dial-in, held callers, dial-out legs. */
export async function buildTelephony(deps: TelephonyDeps): Promise<Telephony> {
  const { config, database, log } = deps;
  const phoneNumbersRepo = new PhoneNumbersRepo(database.db);
  const carrier = await createCarrier(config, phoneNumbersRepo, log, deps.sandboxCallee, deps.runtime.clock);
  return {
    carrier,
    phoneNumbers: new PhoneNumberService(phoneNumbersRepo, carrier, `${config.publicUrl}/twilio/voice`),
    pinless: new PinlessConfigService(
      new DialinConfigsRepo(database.db),
      phoneNumbersRepo,
      deps.secrets,
      `sip.${new URL(config.publicUrl).hostname}`,
      deps.webhookPolicy,
      log,
    ),
    dialinCalls: new DialinCalls({
      playoutClock: deps.runtime.playoutClock,
      fallbackTts: deps.runtime.fallbackTts,
      policy: deps.webhookPolicy,
      holdTimeoutMs: config.dialinHoldTimeoutSecs * 1000,
      holdMusic: new HoldMusic(deps.webhookPolicy, log),
      liveCalls: deps.liveCalls,
      cluster: deps.cluster,
      log,
    }),
    dialout: new DialoutService({
      carrier,
      numbers: phoneNumbersRepo,
      publicUrl: config.publicUrl,
      ringTimeoutSecs: config.dialoutRingTimeoutSecs,
      maxParticipants: config.rooms.maxParticipants,
      log,
      cluster: deps.cluster,
      metrics: deps.metrics,
    }),
  };
}
