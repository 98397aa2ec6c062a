import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import { apiKeyPrefix, generateApiKey, hashApiKey } from './api-key-hash.js';
import type { Database } from './schema.js';

export const DEFAULT_ACCOUNT_NAME = 'default';

export interface Account {
  id: string;
  name: string;
  domainId: string;
}

export interface StoredApiKey {
  id: string;
  accountName: string;
  name: string | null;
  prefix: string;
  createdAt: string;
  revokedAt: string | null;
}

/** Accounts (the spec's "domain") and the API keys that authenticate them. */
export class AccountsRepo {
  constructor(private readonly db: Kysely<Database>) {}

  async ensureAccount(name: string): Promise<Account> {
    const existing = await this.db.selectFrom('accounts').selectAll().where('name', '=', name).executeTakeFirst();
    if (existing) return { id: existing.id, name: existing.name, domainId: existing.domain_id };
    const account = { id: randomUUID(), name, domain_id: randomUUID(), created_at: new Date().toISOString() };
    await this.db
      .insertInto('accounts')
      .values(account)
      .onConflict((oc) => oc.column('name').doNothing())
      .execute();
    const row = await this.db.selectFrom('accounts').selectAll().where('name', '=', name).executeTakeFirstOrThrow();
    return { id: row.id, name: row.name, domainId: row.domain_id };
  }

  async domainOf(accountId: string): Promise<string> {
    const row = await this.db
      .selectFrom('accounts')
      .select('domain_id')
      .where('id', '=', accountId)
      .executeTakeFirstOrThrow();
    return row.domain_id;
  }

  async findAccountById(id: string): Promise<Account | undefined> {
    const row = await this.db.selectFrom('accounts').selectAll().where('id', '=', id).executeTakeFirst();
    return row ? { id: row.id, name: row.name, domainId: row.domain_id } : undefined;
  }

  async findAccountByKeyHash(keyHash: string): Promise<Account | undefined> {
    const row = await this.db
      .selectFrom('api_keys')
      .innerJoin('accounts', 'accounts.id', 'api_keys.account_id')
      .select(['accounts.id', 'accounts.name', 'accounts.domain_id'])
      .where('api_keys.key_hash', '=', keyHash)
      .where('api_keys.revoked_at', 'is', null)
      .executeTakeFirst();
    return row ? { id: row.id, name: row.name, domainId: row.domain_id } : undefined;
  }

  /** Creates a key for the named account (creating the account too); returns the key once. */
  async createKey(accountName: string, keyName: string | null = null): Promise<{ key: string; record: StoredApiKey }> {
    const account = await this.ensureAccount(accountName);
    const key = generateApiKey();
    const row = {
      id: randomUUID(),
      account_id: account.id,
      name: keyName,
      key_hash: hashApiKey(key),
      key_prefix: apiKeyPrefix(key),
      created_at: new Date().toISOString(),
      revoked_at: null,
    };
    await this.db.insertInto('api_keys').values(row).execute();
    return {
      key,
      record: {
        id: row.id,
        accountName,
        name: keyName,
        prefix: row.key_prefix,
        createdAt: row.created_at,
        revokedAt: null,
      },
    };
  }

  async listKeys(): Promise<StoredApiKey[]> {
    const rows = await this.db
      .selectFrom('api_keys')
      .innerJoin('accounts', 'accounts.id', 'api_keys.account_id')
      .select([
        'api_keys.id',
        'accounts.name as account_name',
        'api_keys.name',
        'api_keys.key_prefix',
        'api_keys.created_at',
        'api_keys.revoked_at',
      ])
      .orderBy('api_keys.created_at')
      .execute();
    return rows.map((r) => ({
      id: r.id,
      accountName: r.account_name,
      name: r.name,
      prefix: r.key_prefix,
      createdAt: r.created_at,
      revokedAt: r.revoked_at,
    }));
  }

  /** Returns false when no active key has that id. */
  async revokeKey(id: string): Promise<boolean> {
    const result = await this.db
      .updateTable('api_keys')
      .set({ revoked_at: new Date().toISOString() })
      .where('id', '=', id)
      .where('revoked_at', 'is', null)
      .executeTakeFirst();
    return Number(result.numUpdatedRows) > 0;
  }

  async countActiveKeys(): Promise<number> {
    const row = await this.db
      .selectFrom('api_keys')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('revoked_at', 'is', null)
      .executeTakeFirstOrThrow();
    return Number(row.n);
  }
}
