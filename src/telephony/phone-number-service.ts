import { randomUUID } from 'node:crypto';
import { ApiError } from '../shared/api-error.js';
import { type PageQuery, pageDirection } from '../store/paging.js';
import type { PhoneNumberRow, PhoneNumbersRepo } from '../store/phone-numbers-repo.js';
import type { Account } from '../store/accounts-repo.js';
import { type Carrier, CarrierError, type NumberSearch } from './carrier/carrier.js';

/** A purchased number as GET /v1/purchased-phone-numbers shows it (the hosted service's fields). */
export interface PurchasedNumberView {
  id: string;
  name: string | null;
  type: 'purchased_phone_number';
  pagination_id: string;
  created_date: string;
  number: string;
  region: string;
  status: 'verified';
  verified: true;
}

/** Endpoints 6–8 and release: searching, buying, listing and releasing numbers at the carrier. */
export class PhoneNumberService {
  constructor(
    private readonly repo: PhoneNumbersRepo,
    private readonly carrier: Carrier,
    /** Where a bought number's voice webhook points: the carrier's inbound path of this service. */
    private readonly voiceUrl: string,
  ) {}

  async search(
    filters: NumberSearch,
  ): Promise<{ total_count: number; data: Array<{ number: string; region: string; city: string }> }> {
    const found = await this.atCarrier(() => this.carrier.search(filters));
    return {
      total_count: found.length,
      data: found.map((n) => ({ number: n.number, region: n.region, city: n.city })),
    };
  }

  async buy(
    account: Account,
    number: string | undefined,
    name: string | undefined,
  ): Promise<{ id: string; number: string }> {
    let chosen = number;
    if (chosen === undefined) {
      const [first] = await this.atCarrier(() => this.carrier.search({ limit: 1 }));
      if (!first) throw new ApiError('not-found', 'the carrier has no number available');
      chosen = first.number;
    } else {
      const holder = await this.repo.findByNumber(chosen);
      if (holder) {
        throw holder.account_id === account.id
          ? new ApiError('conflict-error', `${chosen} is already yours (id ${holder.id})`)
          : new ApiError('conflict-error', `${chosen} is held by another account`);
      }
    }
    const bought = await this.atCarrier(() => this.carrier.purchase(chosen, this.voiceUrl));
    const id = randomUUID();
    const inserted = await this.repo.insert({
      id,
      account_id: account.id,
      number: chosen,
      name: name ?? null,
      region: bought.region,
      city: bought.city,
      carrier: this.carrier.name,
      carrier_ref: bought.carrierRef,
      created_at: new Date().toISOString(),
    });
    if (!inserted) {
      // Someone bought it between our check and the insert: give it back rather than hold it twice.
      await this.carrier.release(bought.carrierRef).catch(() => undefined);
      throw new ApiError('conflict-error', `${chosen} was bought by someone else just now`);
    }
    return { id, number: chosen };
  }

  async list(
    account: Account,
    page: PageQuery,
    filters: { name?: string; number?: string },
  ): Promise<{ total_count: number; data: PurchasedNumberView[] }> {
    const direction = await pageDirection(page, (id) => this.repo.seqOf(account.id, id), 'purchased number');
    const [rows, total] = await Promise.all([
      this.repo.list(account.id, direction, page.limit, filters),
      this.repo.count(account.id, filters),
    ]);
    return { total_count: total, data: rows.map(view) };
  }

  async release(account: Account, id: string): Promise<{ id: string; number: string; released: true }> {
    const row = await this.repo.get(account.id, id);
    if (!row) throw new ApiError('not-found', `no purchased number with id ${id}`);
    await this.atCarrier(() => this.carrier.release(row.carrier_ref));
    await this.repo.delete(account.id, id);
    return { id, number: row.number, released: true };
  }

  private async atCarrier<T>(action: () => Promise<T>): Promise<T> {
    try {
      return await action();
    } catch (err) {
      if (!(err instanceof CarrierError)) throw err;
      throw new ApiError(
        err.kind === 'not-found' ? 'not-found' : err.kind === 'conflict' ? 'conflict-error' : 'carrier-error',
        err.message,
      );
    }
  }
}

/** "Mon, 23 Nov 2026 08:00:00 +0000", the date form the hosted service used. */
function hostedDate(iso: string): string {
  return new Date(iso).toUTCString().replace('GMT', '+0000');
}

function view(row: PhoneNumberRow): PurchasedNumberView {
  return {
    id: row.id,
    name: row.name,
    type: 'purchased_phone_number',
    pagination_id: row.id,
    created_date: hostedDate(row.created_at),
    number: row.number,
    region: row.region,
    status: 'verified',
    verified: true,
  };
}
