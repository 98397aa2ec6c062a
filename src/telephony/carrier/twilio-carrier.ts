import twilio from 'twilio';

type RequestOptions<TData> = Parameters<InstanceType<typeof twilio.RequestClient>['request']>[0] & { data?: TData };
type TwilioResponse<TData> = Awaited<ReturnType<InstanceType<typeof twilio.RequestClient>['request']>> & {
  body: TData;
};
import {
  type AvailableNumber,
  type Carrier,
  CarrierError,
  type NumberSearch,
  type OutboundCallRequest,
  type OutboundCallStage,
  type PurchasedAtCarrier,
} from './carrier.js';
import { matchesSearch } from './sandbox-carrier.js';
import { buildTransferTwiml } from '../twiml.js';

export interface TwilioCarrierOptions {
  accountSid: string;
  authToken: string;
  /** Another origin for Twilio's REST API (a fake in tests); default https://api.twilio.com. */
  baseUrl?: string;
  /** Numbers are searched in this country. */
  country?: string;
}

/** Sends every request of the official client to `baseUrl` instead of Twilio's hosts. */
class RedirectingRequestClient extends twilio.RequestClient {
  constructor(private readonly baseUrl: string) {
    super();
  }

  override request<TData>(opts: RequestOptions<TData>): Promise<TwilioResponse<TData>> {
    const original = new URL(opts.uri);
    const target = new URL(original.pathname + original.search, this.baseUrl);
    return super.request<TData>({ ...opts, uri: target.href });
  }
}

/**
 * Numbers from Twilio through its official library: search local numbers, buy one with its voice
 * webhook pointed at this service, release it. Twilio's `contains` matches anywhere, so
 * starts_with and ends_with are asked as `contains` and narrowed here.
 */
export class TwilioCarrier implements Carrier {
  readonly name = 'twilio' as const;
  private readonly client: twilio.Twilio;
  private readonly country: string;

  constructor(options: TwilioCarrierOptions) {
    this.client = twilio(options.accountSid, options.authToken, {
      httpClient: options.baseUrl ? new RedirectingRequestClient(options.baseUrl) : undefined,
      autoRetry: false,
    });
    this.country = options.country ?? 'US';
  }

  async search(filters: NumberSearch): Promise<AvailableNumber[]> {
    const pattern = filters.contains ?? filters.startsWith ?? filters.endsWith;
    try {
      const found = await this.client.availablePhoneNumbers(this.country).local.list({
        areaCode: filters.areacode ? Number(filters.areacode) : undefined,
        inRegion: filters.region,
        inLocality: filters.city,
        contains: pattern,
        voiceEnabled: true,
        limit: Math.min(filters.limit * (pattern ? 3 : 1), 100),
      });
      return found
        .map((n) => ({ number: n.phoneNumber, region: n.region ?? '', city: n.locality ?? '' }))
        .filter((n) => matchesSearch(n, { ...filters, region: undefined, city: undefined, areacode: undefined }))
        .slice(0, filters.limit);
    } catch (err) {
      throw carrierError('search', err);
    }
  }

  async purchase(number: string, voiceUrl: string): Promise<PurchasedAtCarrier> {
    try {
      const bought = await this.client.incomingPhoneNumbers.create({
        phoneNumber: number,
        voiceUrl,
        voiceMethod: 'POST',
      });
      return { carrierRef: bought.sid, region: '', city: '' };
    } catch (err) {
      throw carrierError('purchase', err);
    }
  }

  async release(carrierRef: string): Promise<void> {
    try {
      await this.client.incomingPhoneNumbers(carrierRef).remove();
    } catch (err) {
      // Already gone at Twilio: releasing it here is what the caller wants anyway.
      if ((err as { status?: number }).status === 404) return;
      throw carrierError('release', err);
    }
  }

  /**
   * Calls.json with the answer URL (TwiML that streams the leg to this service) and status
   * callbacks for every stage, so ringing, answered and the final outcome all reach the leg.
   */
  async dial(request: OutboundCallRequest): Promise<{ carrierRef: string }> {
    try {
      const call = await this.client.calls.create({
        to: request.to,
        from: request.from,
        url: request.answerUrl,
        method: 'POST',
        statusCallback: request.statusUrl,
        statusCallbackMethod: 'POST',
        statusCallbackEvent: ['initiated', 'ringing', 'answered', 'completed'],
        timeout: request.ringTimeoutSecs,
      });
      return { carrierRef: call.sid };
    } catch (err) {
      throw carrierError('call', err);
    }
  }

  refusal(): undefined {
    // Twilio decides what it can reach (geo permissions, SIP domains); its answer comes as a status.
    return undefined;
  }

  /** Calls/{sid} with new TwiML that dials the target: Twilio leaves our <Connect><Stream> and ends the stream. */
  async transfer(carrierRef: string, target: string): Promise<void> {
    try {
      await this.client.calls(carrierRef).update({ twiml: buildTransferTwiml(target) });
    } catch (err) {
      throw carrierError('transfer', err);
    }
  }

  async hangUp(carrierRef: string, stage: OutboundCallStage): Promise<void> {
    try {
      // Twilio cancels a queued or ringing call with `canceled` and ends a live one with `completed`.
      await this.client.calls(carrierRef).update({ status: stage === 'ringing' ? 'canceled' : 'completed' });
    } catch (err) {
      if ((err as { status?: number }).status === 404) return;
      throw carrierError('hang-up', err);
    }
  }
}

function carrierError(action: string, err: unknown): CarrierError {
  const status = (err as { status?: number }).status;
  const message = err instanceof Error ? err.message : String(err);
  return new CarrierError(
    `twilio ${action} failed${status ? ` (HTTP ${status})` : ''}: ${message}`,
    status === 404 ? 'not-found' : 'carrier',
  );
}
