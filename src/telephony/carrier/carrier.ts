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
