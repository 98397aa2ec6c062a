import type { Logger } from 'pino';
import type { Clock } from '../../shared/clock.js';
import {
  type AvailableNumber,
  type Carrier,
  CarrierError,
  type NumberSearch,
  type OutboundCallRequest,
  type PurchasedAtCarrier,
} from './carrier.js';
import { type SandboxCallee, SandboxOutboundCall, SandboxTransferLeg, sandboxRefusal } from './sandbox-call.js';
import { SANDBOX_INVENTORY, sandboxNumber } from './sandbox-inventory.js';

/** National digits of a +1 number: "+14155550123" → "4155550123". */
export function nationalDigits(number: string): string {
  return number.replace(/^\+1/, '');
}

/** Applies the search filters the way the route documents them, to any list of numbers. */
export function matchesSearch(entry: AvailableNumber, filters: NumberSearch): boolean {
  const digits = nationalDigits(entry.number);
  if (filters.region && entry.region !== filters.region.toUpperCase()) return false;
  if (filters.city && entry.city.toLowerCase() !== filters.city.toLowerCase()) return false;
  if (filters.areacode && !digits.startsWith(filters.areacode)) return false;
  if (filters.contains && !digits.includes(filters.contains)) return false;
  if (filters.startsWith && !digits.startsWith(filters.startsWith)) return false;
  if (filters.endsWith && !digits.endsWith(filters.endsWith)) return false;
  return true;
}

/**
 * The embedded carrier: a fixed inventory of fictional numbers; purchases live in the store (the
 * caller passes which numbers are held), and calls to them are simulated through the same
 * webhook and media websocket a real carrier uses.
 */
export class SandboxCarrier implements Carrier {
  readonly name = 'sandbox' as const;

  private readonly calls = new Map<string, SandboxOutboundCall>();

  constructor(
    private readonly heldNumbers: () => Promise<ReadonlySet<string>>,
    private readonly callOptions: { authToken?: string; log: Logger; callee?: SandboxCallee; clock: Clock },
  ) {}

  async search(filters: NumberSearch): Promise<AvailableNumber[]> {
    const held = await this.heldNumbers();
    const found: AvailableNumber[] = [];
    for (const entry of SANDBOX_INVENTORY) {
      if (found.length >= filters.limit) break;
      if (!held.has(entry.number) && matchesSearch(entry, filters)) found.push(entry);
    }
    return found;
  }

  async purchase(number: string): Promise<PurchasedAtCarrier> {
    const entry = sandboxNumber(number);
    if (!entry)
      throw new CarrierError(
        `${number} is not a number the sandbox carrier has; search with GET /v1/list-available-numbers`,
        'not-found',
      );
    return { carrierRef: `sandbox:${number}`, region: entry.region, city: entry.city };
  }

  async release(): Promise<void> {
    // The inventory is fixed: a released number is simply no longer held.
  }

  /** Simulates the call in this process; a non-sandbox destination is refused, never rung. */
  async dial(request: OutboundCallRequest): Promise<{ carrierRef: string }> {
    const refusal = sandboxRefusal(request.to);
    if (refusal) throw new CarrierError(refusal, 'carrier');
    const { callee, ...callOptions } = this.callOptions;
    // The callee is a development tool, plugged in by `switchboard serve`; an embedding without one gets a clear refusal.
    if (!callee)
      throw new CarrierError(
        'the sandbox carrier has no simulated callee in this process (`switchboard serve` plugs one in)',
        'carrier',
      );
    const call = new SandboxOutboundCall(request, { ...callOptions, callee });
    this.calls.set(call.callSid, call);
    void call
      .run()
      .catch((err: unknown) => this.callOptions.log.error({ err, callSid: call.callSid }, 'sandbox call failed'))
      .finally(() => this.calls.delete(call.callSid));
    return { carrierRef: call.callSid };
  }

  async hangUp(carrierRef: string): Promise<void> {
    this.calls.get(carrierRef)?.hangUp();
  }

  /**
   * A cold transfer as Twilio's `<Dial>` plays it: a leg to the target rings (the reserved numbers
   * are busy, do not answer or are unreachable) and the plugged-in callee answers it; the bot's
   * media stream ends (the service closes it). A number outside the sandbox is refused, never
   * rung. The caller's audio never passes through the sandbox (the simulator talks to the media
   * stream directly), so the two simulated ends are not bridged for sound, and the caller's
   * number is not known here (the leg is from `anonymous`, as a withheld caller id reads).
   */
  async transfer(carrierRef: string, target: string): Promise<void> {
    const refusal = sandboxRefusal(target);
    if (refusal) throw new CarrierError(refusal, 'carrier');
    const { callee, log, clock } = this.callOptions;
    if (!callee)
      throw new CarrierError(
        'the sandbox carrier has no simulated callee in this process to answer the transfer (`switchboard serve` plugs one in)',
        'carrier',
      );
    const leg = new SandboxTransferLeg({ callSid: carrierRef, from: 'anonymous', target }, { callee, log, clock });
    log.info({ callSid: carrierRef, target, legCallSid: leg.callSid }, 'sandbox transfer: dialling the target');
    void leg.run().catch((err: unknown) => log.error({ err, callSid: leg.callSid }, 'sandbox transfer leg failed'));
  }

  /** Why a destination cannot be dialled, before any call is placed. */
  refusal(to: string): string | undefined {
    return sandboxRefusal(to);
  }
}
