import type { Kysely, Selectable } from 'kysely';
import { type PageDirection, readPage, seqOf } from './paging.js';
import type { Database } from './schema.js';

export interface BotConfigRow {
  seq: number;
  id: string;
  accountId: string;
  bodyJson: string;
  apiKeysSealed: string | null;
  /** The signing secrets, sealed (see the table's column). */
  secretsSealed: string | null;
  createdAt: string;
  updatedAt: string;
}

type Selected = Selectable<Database['bot_configs']>;

function toRow(r: Selected): BotConfigRow {
  return {
    seq: r.seq,
    id: r.id,
    accountId: r.account_id,
    bodyJson: r.body_json,
    apiKeysSealed: r.api_keys_sealed,
    secretsSealed: r.secrets_sealed,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  };
}

/** Stored telephony bot configurations. Every read but `getForCall` is scoped to an account. */
export class BotConfigsRepo {
  constructor(private readonly db: Kysely<Database>) {}

  async insert(row: {
    id: string;
    accountId: string;
    bodyJson: string;
    apiKeysSealed: string | null;
    secretsSealed: string | null;
  }): Promise<BotConfigRow> {
    const now = new Date().toISOString();
    await this.db
      .insertInto('bot_configs')
      .values({
        id: row.id,
        account_id: row.accountId,
        body_json: row.bodyJson,
        api_keys_sealed: row.apiKeysSealed,
        secrets_sealed: row.secretsSealed,
        created_at: now,
        updated_at: now,
      })
      .execute();
    return (await this.get(row.accountId, row.id))!;
  }

  /** Replaces body, keys and secrets; returns undefined when the account has no such configuration. */
  async replace(
    accountId: string,
    id: string,
    sealed: { bodyJson: string; apiKeysSealed: string | null; secretsSealed: string | null },
  ): Promise<BotConfigRow | undefined> {
    const result = await this.db
      .updateTable('bot_configs')
      .set({
        body_json: sealed.bodyJson,
        api_keys_sealed: sealed.apiKeysSealed,
        secrets_sealed: sealed.secretsSealed,
        updated_at: new Date().toISOString(),
      })
      .where('id', '=', id)
      .where('account_id', '=', accountId)
      .executeTakeFirst();
    if (Number(result.numUpdatedRows) === 0) return undefined;
    return this.get(accountId, id);
  }

  async get(accountId: string, id: string): Promise<BotConfigRow | undefined> {
    const r = await this.db
      .selectFrom('bot_configs')
      .selectAll()
      .where('id', '=', id)
      .where('account_id', '=', accountId)
      .executeTakeFirst();
    return r ? toRow(r) : undefined;
  }

  /** For the media websocket and TwiML webhook, which the carrier calls without an API key. */
  async getForCall(id: string): Promise<BotConfigRow | undefined> {
    const r = await this.db.selectFrom('bot_configs').selectAll().where('id', '=', id).executeTakeFirst();
    return r ? toRow(r) : undefined;
  }

  /** Whether any account has a configuration (the server then readies what calls need at start). */
  async hasAny(): Promise<boolean> {
    return (await this.db.selectFrom('bot_configs').select('seq').limit(1).executeTakeFirst()) !== undefined;
  }

  async seqOf(accountId: string, id: string): Promise<number | undefined> {
    return seqOf(this.db, 'bot_configs', accountId, id);
  }

  /** Newest first. */
  async list(accountId: string, direction: PageDirection, limit: number): Promise<BotConfigRow[]> {
    const query = this.db.selectFrom('bot_configs').selectAll().where('account_id', '=', accountId);
    return (await readPage(query, direction, limit)).map(toRow);
  }

  /**
   * Rows written before the signing secrets had a column of their own: their body_json still
   * holds them (a sealed `webhook_secret_sealed`, a `status_callback` with its hmac in the clear).
   */
  async withSecretsInBody(): Promise<BotConfigRow[]> {
    const rows = await this.db
      .selectFrom('bot_configs')
      .selectAll()
      .where('secrets_sealed', 'is', null)
      .where((eb) =>
        eb.or([eb('body_json', 'like', '%"webhook_secret_sealed"%'), eb('body_json', 'like', '%"status_callback"%')]),
      )
      .orderBy('seq')
      .execute();
    return rows.map(toRow);
  }

  /**
   * Moves a row's secrets out of its body, only if the body is still the one read (a node that
   * replaced the configuration meanwhile wrote it in the new form). True when written.
   */
  async moveSecrets(row: BotConfigRow, bodyJson: string, secretsSealed: string): Promise<boolean> {
    const result = await this.db
      .updateTable('bot_configs')
      .set({ body_json: bodyJson, secrets_sealed: secretsSealed })
      .where('id', '=', row.id)
      .where('body_json', '=', row.bodyJson)
      .where('secrets_sealed', 'is', null)
      .executeTakeFirst();
    return Number(result.numUpdatedRows) > 0;
  }

  async delete(accountId: string, id: string): Promise<boolean> {
    const result = await this.db
      .deleteFrom('bot_configs')
      .where('id', '=', id)
      .where('account_id', '=', accountId)
      .executeTakeFirst();
    return Number(result.numDeletedRows) > 0;
  }
}
