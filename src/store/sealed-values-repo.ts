import type { Kysely } from 'kysely';
import type { Database } from './schema.js';

/**
 * One value sealed with the secret key: a configuration's api_keys or its signing secrets, or an
 * account's dial-in entries.
 */
export interface SealedValue {
  kind: 'bot-config' | 'bot-config-secrets' | 'dialin-config';
  /** The configuration's id, or the dial-in entries' account id. */
  id: string;
  sealed: string;
}

/** Every sealed value of the store, whatever holds it: for checking a key against the store and for re-sealing. */
export class SealedValuesRepo {
  constructor(private readonly db: Kysely<Database>) {}

  /** Any one sealed value, or undefined when the store holds none. */
  async any(): Promise<SealedValue | undefined> {
    const config = await this.db
      .selectFrom('bot_configs')
      .select(['id', 'api_keys_sealed'])
      .where('api_keys_sealed', 'is not', null)
      .limit(1)
      .executeTakeFirst();
    if (config) return { kind: 'bot-config', id: config.id, sealed: config.api_keys_sealed! };
    const secrets = await this.db
      .selectFrom('bot_configs')
      .select(['id', 'secrets_sealed'])
      .where('secrets_sealed', 'is not', null)
      .limit(1)
      .executeTakeFirst();
    if (secrets) return { kind: 'bot-config-secrets', id: secrets.id, sealed: secrets.secrets_sealed! };
    const dialin = await this.db
      .selectFrom('dialin_configs')
      .select(['account_id', 'entries_sealed'])
      .limit(1)
      .executeTakeFirst();
    return dialin ? { kind: 'dialin-config', id: dialin.account_id, sealed: dialin.entries_sealed } : undefined;
  }

  async all(): Promise<SealedValue[]> {
    const configs = await this.db
      .selectFrom('bot_configs')
      .select(['id', 'api_keys_sealed'])
      .where('api_keys_sealed', 'is not', null)
      .orderBy('seq')
      .execute();
    const secrets = await this.db
      .selectFrom('bot_configs')
      .select(['id', 'secrets_sealed'])
      .where('secrets_sealed', 'is not', null)
      .orderBy('seq')
      .execute();
    const dialins = await this.db
      .selectFrom('dialin_configs')
      .select(['account_id', 'entries_sealed'])
      .orderBy('account_id')
      .execute();
    return [
      ...configs.map((r): SealedValue => ({ kind: 'bot-config', id: r.id, sealed: r.api_keys_sealed! })),
      ...secrets.map((r): SealedValue => ({ kind: 'bot-config-secrets', id: r.id, sealed: r.secrets_sealed! })),
      ...dialins.map((r): SealedValue => ({ kind: 'dialin-config', id: r.account_id, sealed: r.entries_sealed })),
    ];
  }

  /**
   * Replaces a sealed value with the same contents sealed again, only if it is still the value
   * read: a node that wrote the row meanwhile wins. True when replaced.
   */
  async replace(value: SealedValue, resealed: string): Promise<boolean> {
    const result =
      value.kind === 'bot-config'
        ? await this.db
            .updateTable('bot_configs')
            .set({ api_keys_sealed: resealed })
            .where('id', '=', value.id)
            .where('api_keys_sealed', '=', value.sealed)
            .executeTakeFirst()
        : value.kind === 'bot-config-secrets'
          ? await this.db
              .updateTable('bot_configs')
              .set({ secrets_sealed: resealed })
              .where('id', '=', value.id)
              .where('secrets_sealed', '=', value.sealed)
              .executeTakeFirst()
          : await this.db
              .updateTable('dialin_configs')
              .set({ entries_sealed: resealed })
              .where('account_id', '=', value.id)
              .where('entries_sealed', '=', value.sealed)
              .executeTakeFirst();
    return Number(result.numUpdatedRows) > 0;
  }
}
