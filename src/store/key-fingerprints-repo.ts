import type { Kysely } from 'kysely';
import type { Database } from './schema.js';

/** The fingerprints of the store's service keys, by key name (security/key-fingerprint.ts). */
export class KeyFingerprintsRepo {
  constructor(private readonly db: Kysely<Database>) {}

  async get(name: string): Promise<string | undefined> {
    const row = await this.db
      .selectFrom('key_fingerprints')
      .select('fingerprint')
      .where('name', '=', name)
      .executeTakeFirst();
    return row?.fingerprint;
  }

  /**
   * The recorded fingerprint, recording `candidate` first if there is none. The primary key
   * decides between nodes starting together: one insert wins and everyone reads the winner's.
   */
  async getOrCreate(name: string, candidate: string): Promise<string> {
    await this.db
      .insertInto('key_fingerprints')
      .values({ name, fingerprint: candidate, updated_at: new Date().toISOString() })
      .onConflict((c) => c.column('name').doNothing())
      .execute();
    return (await this.get(name))!;
  }

  /** Records a new fingerprint: the key was rotated on purpose. */
  async set(name: string, fingerprint: string): Promise<void> {
    const updatedAt = new Date().toISOString();
    await this.db
      .insertInto('key_fingerprints')
      .values({ name, fingerprint, updated_at: updatedAt })
      .onConflict((c) => c.column('name').doUpdateSet({ fingerprint, updated_at: updatedAt }))
      .execute();
  }
}
