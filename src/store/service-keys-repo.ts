import type { Kysely } from 'kysely';
import type { Database } from './schema.js';

/**
 * The keys all nodes of a PostgreSQL store share, by name, base64 (while the secret key is being
 * rotated, its row holds the old and the new key, comma-separated).
 */
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

  /** Replaces the stored key of that name (a rotation), or stores it. */
  async set(name: string, keyBase64: string): Promise<void> {
    await this.db
      .insertInto('service_keys')
      .values({ name, key_base64: keyBase64, created_at: new Date().toISOString() })
      .onConflict((c) => c.column('name').doUpdateSet({ key_base64: keyBase64 }))
      .execute();
  }
}
