import type { CallOutcome } from './call-record.js';

/** The close reason every call ended by a shutdown carries (lifecycle/live-calls.ts's SHUTDOWN_REASON). */
const SHUTDOWN_REASON = 'server shutting down';

/**
 * Who ended the call and why, from its close reason, whether our side closed it, and whether a
 * provider failed. Our side ends a call for max_duration, a shutdown, an error (a provider lost
 * for good is a provider failure), or because the bot was done; anything else is the far end
 * hanging up (the carrier's `stop`, a closed socket, everyone leaving a room).
 */
export function callOutcome(reason: string, ourSide: boolean, providerErrors: number): CallOutcome {
  if (reason === 'max_duration') return 'max_duration';
  if (reason === SHUTDOWN_REASON) return 'drain';
  if (reason === 'transferred') return 'transferred';
  if (reason === 'error') return providerErrors > 0 ? 'provider_failure' : 'error';
  // Rooms: the room decides it is over on its own.
  if (reason === 'idle' || reason === 'nobody joined' || reason === 'disconnect-bot') return 'bot_ended';
  if (ourSide) return 'bot_ended';
  return 'caller_hung_up';
}
