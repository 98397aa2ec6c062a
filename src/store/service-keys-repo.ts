import type { Kysely } from 'kysely';
import type { Database } from './schema.js';

/** The keys all nodes of a PostgreSQL store share, by name, base64. */
export class ServiceKeysRepo {
  constructor(private readonly db: Kysely<Database>) {}

  /**
   * The stored key of that name, storing `candidate` first if there is none. The primary key
   * decides between nodes starting together: one insert wins and everyone reads the winner.
   */
  async getOrCreate(name: string, candidateBase64: string): Promise<string> {
    await this.db
      .insertInto('service_keys')
      .values({ name, key_base64: candidateBase64, created_at: new Date().toISOString() })
      .onConflict((c) => c.column('name').doNothing())
      .execute();
    const row = await this.db
      .selectFrom('service_keys')
      .select('key_base64')
      .where('name', '=', name)
      .executeTakeFirstOrThrow();
    return row.key_base64;
  }

  async get(name: string): Promise<string | undefined> {
    const row = await this.db
      .selectFrom('service_keys')
      .select('key_base64')
      .where('name', '=', name)
      .executeTakeFirst();
    return row?.key_base64;
  }
}
