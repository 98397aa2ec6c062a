import type { Logger } from 'pino';
import { type Clock, REAL_CLOCK } from '../../shared/clock.js';
import type { AppConfig } from '../../config/env.js';
import type { PhoneNumbersRepo } from '../../store/phone-numbers-repo.js';
import type { Carrier } from './carrier.js';
import type { SandboxCallee } from './sandbox-call.js';
import { SandboxCarrier } from './sandbox-carrier.js';

/**
 * The carrier SWITCHBOARD_CARRIER names; env validation has already required Twilio's credentials.
 * `sandboxCallee` answers the sandbox's outbound calls (without one the sandbox refuses to dial).
 * Twilio's SDK (about 25 MB, 0.3 s to load) is loaded only for the Twilio carrier, at start-up.
 */
export async function createCarrier(
  config: AppConfig,
  repo: PhoneNumbersRepo,
  log: Logger,
  sandboxCallee?: SandboxCallee,
  /** The calls' clock, which the sandbox's phones ring and talk on. */
  clock: Clock = REAL_CLOCK,
): Promise<Carrier> {
  if (config.carrier === 'twilio') {
    const { TwilioCarrier } = await import('./twilio-carrier.js');
    return new TwilioCarrier({
      accountSid: config.twilio.accountSid!,
      authToken: config.twilio.authToken!,
      baseUrl: config.env.SWITCHBOARD_TWILIO_URL,
    });
  }
  return new SandboxCarrier(() => repo.heldNumbers(), {
    authToken: config.twilio.authToken,
    log: log.child({ carrier: 'sandbox' }),
    callee: sandboxCallee,
    clock,
  });
}
