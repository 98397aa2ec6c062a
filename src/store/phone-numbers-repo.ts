import type { Kysely, Selectable } from 'kysely';
import { type PageDirection, readPage, seqOf } from './paging.js';
import type { Database } from './schema.js';

export type PhoneNumberRow = Selectable<Database['phone_numbers']>;

/** Numbers bought through this service. Reads are scoped to an account, except lookups by number. */
export class PhoneNumbersRepo {
  constructor(private readonly db: Kysely<Database>) {}

  /** Returns false when someone already holds the number (the unique constraint decides). */
  async insert(row: Omit<PhoneNumberRow, 'seq'>): Promise<boolean> {
    const result = await this.db
      .insertInto('phone_numbers')
      .values(row)
      .onConflict((c) => c.column('number').doNothing())
      .executeTakeFirst();
    return Number(result.numInsertedOrUpdatedRows ?? 0n) > 0;
  }

  async get(accountId: string, id: string): Promise<PhoneNumberRow | undefined> {
    return this.db
      .selectFrom('phone_numbers')
      .selectAll()
      .where('id', '=', id)
      .where('account_id', '=', accountId)
      .executeTakeFirst();
  }

  /** Who holds a number, for the carrier's inbound webhook (routed by `To`). */
  async findByNumber(number: string): Promise<PhoneNumberRow | undefined> {
    return this.db.selectFrom('phone_numbers').selectAll().where('number', '=', number).executeTakeFirst();
  }

  async heldNumbers(): Promise<Set<string>> {
    const rows = await this.db.selectFrom('phone_numbers').select('number').execute();
    return new Set(rows.map((r) => r.number));
  }

  async seqOf(accountId: string, id: string): Promise<number | undefined> {
    return seqOf(this.db, 'phone_numbers', accountId, id);
  }

  async count(accountId: string, filters: { name?: string; number?: string }): Promise<number> {
    let query = this.db
      .selectFrom('phone_numbers')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('account_id', '=', accountId);
    if (filters.name) query = query.where('name', '=', filters.name);
    if (filters.number) query = query.where('number', '=', filters.number);
    const r = await query.executeTakeFirstOrThrow();
    return Number(r.n);
  }

  /** Newest first, like every list of the API. */
  async list(
    accountId: string,
    direction: PageDirection,
    limit: number,
    filters: { name?: string; number?: string },
  ): Promise<PhoneNumberRow[]> {
    let query = this.db.selectFrom('phone_numbers').selectAll().where('account_id', '=', accountId);
    if (filters.name) query = query.where('name', '=', filters.name);
    if (filters.number) query = query.where('number', '=', filters.number);
    return readPage(query, direction, limit);
  }

  async delete(accountId: string, id: string): Promise<boolean> {
    const result = await this.db
      .deleteFrom('phone_numbers')
      .where('id', '=', id)
      .where('account_id', '=', accountId)
      .executeTakeFirst();
    return Number(result.numDeletedRows) > 0;
  }
}
