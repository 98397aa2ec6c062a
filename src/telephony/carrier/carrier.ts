/** Filters of GET /v1/list-available-numbers, validated by the route. */
export interface NumberSearch {
  /** ISO 3166-2 subdivision code without the country, e.g. "CA". */
  region?: string;
  city?: string;
  /** Three digits. */
  areacode?: string;
  /** Digits the number contains, starts or ends with (one of the three). */
  contains?: string;
  startsWith?: string;
  endsWith?: string;
  limit: number;
}

export interface AvailableNumber {
  /** E.164. */
  number: string;
  region: string;
  city: string;
}

export interface PurchasedAtCarrier {
  /** The carrier's handle for the number (Twilio's IncomingPhoneNumber sid), kept for release. */
  carrierRef: string;
  region: string;
  city: string;
}

/** An outbound call to place: the carrier fetches `answerUrl` for TwiML when the callee answers. */
export interface OutboundCallRequest {
  /** E.164 number, or a SIP URI (Twilio dials it as is; the sandbox dials its user part). */
  to: string;
  /** E.164 number shown to the callee (one of the account's purchased numbers). */
  from: string;
  answerUrl: string;
  /** Form-encoded status callbacks go here (CallStatus: ringing, in-progress, completed, busy, ...). */
  statusUrl: string;
  /** How long it may ring before it counts as no-answer, seconds. */
  ringTimeoutSecs: number;
}

/** What a call has reached when we hang it up: a ringing call is cancelled, a live one completed. */
export type OutboundCallStage = 'ringing' | 'answered';

/**
 * Where phone numbers come from. `sandbox` is embedded (fictional numbers, calls simulated through
 * the same webhook and media path as a real carrier); `twilio` uses Twilio's REST API.
 */
export interface Carrier {
  readonly name: 'sandbox' | 'twilio';
  search(filters: NumberSearch): Promise<AvailableNumber[]>;
  /** Buys `number`, pointing its voice webhook at `voiceUrl`. Throws CarrierError when it cannot. */
  purchase(number: string, voiceUrl: string): Promise<PurchasedAtCarrier>;
  release(carrierRef: string): Promise<void>;
  /** Places an outbound call; resolves with the carrier's handle once it is queued. */
  dial(request: OutboundCallRequest): Promise<{ carrierRef: string }>;
  /** Ends an outbound call we placed; a call that has already ended is not an error. */
  hangUp(carrierRef: string, stage: OutboundCallStage): Promise<void>;
  /**
   * A cold transfer of a live call (ours, inbound or outbound) to `target`, an E.164 number or a SIP
   * address: the carrier dials it, the caller is connected there, and our media stream ends.
   */
  transfer(carrierRef: string, target: string): Promise<void>;
  /** Why this carrier cannot call `to` at all (checked when a bot is started), or undefined. */
  refusal(to: string): string | undefined;
}

/** A refusal the API reports to the caller (unknown number, taken, carrier said no). */
export class CarrierError extends Error {
  override name = 'CarrierError';
  constructor(
    message: string,
    readonly kind: 'not-found' | 'conflict' | 'carrier',
  ) {
    super(message);
  }
}
