import type { Kysely } from 'kysely';
import type { Database } from './schema.js';

/** Each account's pinless dial-in entries, sealed (they hold signing secrets). */
export class DialinConfigsRepo {
  constructor(private readonly db: Kysely<Database>) {}

  async get(accountId: string): Promise<string | undefined> {
    const row = await this.db
      .selectFrom('dialin_configs')
      .select('entries_sealed')
      .where('account_id', '=', accountId)
      .executeTakeFirst();
    return row?.entries_sealed;
  }

  /** Replaces the account's entries (the API replaces, never merges). */
  async put(accountId: string, entriesSealed: string): Promise<void> {
    const updatedAt = new Date().toISOString();
    await this.db
      .insertInto('dialin_configs')
      .values({ account_id: accountId, entries_sealed: entriesSealed, updated_at: updatedAt })
      .onConflict((c) => c.column('account_id').doUpdateSet({ entries_sealed: entriesSealed, updated_at: updatedAt }))
      .execute();
  }

  /** Every account's sealed entries, for routing an inbound call by the dialled number. */
  async all(): Promise<Array<{ accountId: string; entriesSealed: string }>> {
    const rows = await this.db.selectFrom('dialin_configs').select(['account_id', 'entries_sealed']).execute();
    return rows.map((r) => ({ accountId: r.account_id, entriesSealed: r.entries_sealed }));
  }
}
