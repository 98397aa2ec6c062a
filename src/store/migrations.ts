import {
  type CreateTableBuilder,
  type Kysely,
  type Migration,
  type MigrationProvider,
  Migrator,
  PostgresAdapter,
} from 'kysely';

/**
 * The same migrations build both stores; only column types Kysely cannot express portably
 * differ, so SQLite gets plain SQLite types and a data dir written by any version opens unchanged.
 */
function isPostgres(db: Kysely<unknown>): boolean {
  return db.getExecutor().adapter instanceof PostgresAdapter;
}

/** The insertion-order column that list cursors compare on: SQLite's autoincrement rowid, PostgreSQL's serial. */
function withSeq<TB extends string>(
  db: Kysely<unknown>,
  table: CreateTableBuilder<TB, never>,
): CreateTableBuilder<TB, 'seq'> {
  return isPostgres(db)
    ? table.addColumn('seq', 'serial', (c) => c.primaryKey())
    : table.addColumn('seq', 'integer', (c) => c.primaryKey().autoIncrement());
}

/** Unix seconds: SQLite's integer is 64-bit already; PostgreSQL's would end in 2038. */
function unixSecsType(db: Kysely<unknown>): 'integer' | 'bigint' {
  return isPostgres(db) ? 'bigint' : 'integer';
}

/**
 * Migrations live in code (not files on disk) so the compiled service and the tests run the same
 * list. Append new entries; never edit one that has shipped.
 */
const migrations: Record<string, Migration> = {
  '0001_accounts_keys_bot_configs': {
    async up(db: Kysely<unknown>) {
      await db.schema
        .createTable('accounts')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('name', 'text', (c) => c.notNull().unique())
        .addColumn('domain_id', 'text', (c) => c.notNull().unique())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .execute();
      await db.schema
        .createTable('api_keys')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id'))
        .addColumn('name', 'text')
        .addColumn('key_hash', 'text', (c) => c.notNull().unique())
        .addColumn('key_prefix', 'text', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('revoked_at', 'text')
        .execute();
      await withSeq(db, db.schema.createTable('bot_configs'))
        .addColumn('id', 'text', (c) => c.notNull().unique())
        .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id'))
        .addColumn('body_json', 'text', (c) => c.notNull())
        .addColumn('api_keys_sealed', 'text')
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('updated_at', 'text', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('bot_configs_account_seq').on('bot_configs').columns(['account_id', 'seq']).execute();
    },
  },
  '0002_phone_numbers': {
    async up(db: Kysely<unknown>) {
      await withSeq(db, db.schema.createTable('phone_numbers'))
        .addColumn('id', 'text', (c) => c.notNull().unique())
        .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id'))
        // One holder per number: a second purchase fails on this constraint, not on a race.
        .addColumn('number', 'text', (c) => c.notNull().unique())
        .addColumn('name', 'text')
        .addColumn('region', 'text', (c) => c.notNull())
        .addColumn('city', 'text', (c) => c.notNull())
        .addColumn('carrier', 'text', (c) => c.notNull())
        .addColumn('carrier_ref', 'text', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .execute();
      await db.schema
        .createIndex('phone_numbers_account_seq')
        .on('phone_numbers')
        .columns(['account_id', 'seq'])
        .execute();
    },
  },
  '0003_dialin_configs': {
    async up(db: Kysely<unknown>) {
      await db.schema
        .createTable('dialin_configs')
        .addColumn('account_id', 'text', (c) => c.primaryKey().references('accounts.id'))
        // The pinless_dialin entries as JSON, sealed: they carry the webhook signing secrets.
        .addColumn('entries_sealed', 'text', (c) => c.notNull())
        .addColumn('updated_at', 'text', (c) => c.notNull())
        .execute();
    },
  },
  '0004_recordings': {
    async up(db: Kysely<unknown>) {
      await withSeq(db, db.schema.createTable('recordings'))
        .addColumn('id', 'text', (c) => c.notNull().unique())
        .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id'))
        .addColumn('room_name', 'text', (c) => c.notNull())
        .addColumn('mtg_session_id', 'text', (c) => c.notNull())
        .addColumn('start_ts', unixSecsType(db), (c) => c.notNull())
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('max_participants', 'integer', (c) => c.notNull())
        .addColumn('duration_secs', 'integer')
        .addColumn('tracks_json', 'text')
        .addColumn('s3_key', 'text', (c) => c.notNull())
        .addColumn('storage', 'text', (c) => c.notNull())
        .addColumn('bucket_json', 'text')
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('finished_at', 'text')
        .execute();
      await db.schema.createIndex('recordings_account_seq').on('recordings').columns(['account_id', 'seq']).execute();
      // Start-up recovery looks for recordings a dead process left unfinished.
      await db.schema.createIndex('recordings_status').on('recordings').column('status').execute();
    },
  },
  '0005_service_keys': {
    async up(db: Kysely<unknown>) {
      // The keys every node of a PostgreSQL store shares (sealing, link and room-token signing),
      // written once by whichever node starts first. The SQLite store keeps them as files.
      await db.schema
        .createTable('service_keys')
        .addColumn('name', 'text', (c) => c.primaryKey())
        .addColumn('key_base64', 'text', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .execute();
    },
  },
  '0006_recordings_node': {
    async up(db: Kysely<unknown>) {
      // Whose data dir holds the files: start-up recovery takes only its own (null: any node's).
      await db.schema.alterTable('recordings').addColumn('node_id', 'text').execute();
    },
  },
  '0007_key_fingerprints': {
    async up(db: Kysely<unknown>) {
      // What each service key was when the store first used it, so a node given another key
      // refuses to start instead of failing every read of what the others sealed.
      await db.schema
        .createTable('key_fingerprints')
        .addColumn('name', 'text', (c) => c.primaryKey())
        .addColumn('fingerprint', 'text', (c) => c.notNull())
        .addColumn('updated_at', 'text', (c) => c.notNull())
        .execute();
    },
  },
  '0009_call_records': {
    async up(db: Kysely<unknown>) {
      // One row per call or room: inserted when it starts (so a node that dies mid-call leaves it
      // `in-progress`, for whoever finds it to mark `interrupted`), written in full once it ends.
      await withSeq(db, db.schema.createTable('call_records'))
        .addColumn('id', 'text', (c) => c.notNull().unique())
        .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id'))
        .addColumn('kind', 'text', (c) => c.notNull())
        .addColumn('bot_config_id', 'text')
        .addColumn('profile', 'text', (c) => c.notNull())
        .addColumn('from_number', 'text')
        .addColumn('to_number', 'text')
        .addColumn('call_sid', 'text')
        .addColumn('room_name', 'text')
        .addColumn('recording_id', 'text')
        .addColumn('node_id', 'text', (c) => c.notNull())
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('started_at', 'text', (c) => c.notNull())
        .addColumn('ended_at', 'text')
        .addColumn('duration_ms', 'integer')
        .addColumn('outcome', 'text')
        .addColumn('end_reason', 'text')
        .addColumn('summary_json', 'text')
        .addColumn('turns_json', 'text')
        .addColumn('transcript_json', 'text')
        .execute();
      await db.schema
        .createIndex('call_records_account_seq')
        .on('call_records')
        .columns(['account_id', 'seq'])
        .execute();
      // Recovery and reaping look for rows left in progress; retention for old ones.
      await db.schema.createIndex('call_records_status').on('call_records').columns(['status', 'node_id']).execute();
      await db.schema.createIndex('call_records_started').on('call_records').column('started_at').execute();
      await db.schema.createIndex('call_records_recording').on('call_records').column('recording_id').execute();
    },
  },
  '0010_bot_config_secrets': {
    async up(db: Kysely<unknown>) {
      // A configuration's signing secrets leave body_json for a column of their own, sealed. The
      // rows written before are sealed by sealConfigSecrets (bots/config-secrets.ts)
      // once the node holds the secret key, which it loads after the migrations.
      await db.schema.alterTable('bot_configs').addColumn('secrets_sealed', 'text').execute();
    },
  },
};

const provider: MigrationProvider = { getMigrations: async () => migrations };

/** Every migration, in order. */
export const MIGRATION_NAMES: readonly string[] = Object.keys(migrations);

/**
 * Brings the store to the latest schema. On PostgreSQL, Kysely's migrator holds an advisory lock
 * and runs the pending migrations in one transaction, re-reading what is done once it has the
 * lock, so nodes starting together apply each migration exactly once.
 */
export async function migrateToLatest(db: Kysely<unknown>): Promise<void> {
  const migrator = new Migrator({ db, provider });
  const { error, results } = await migrator.migrateToLatest();
  const failed = results?.find((r) => r.status === 'Error');
  if (error || failed) {
    const cause = error instanceof Error ? error.message : String(error ?? failed?.migrationName);
    throw new Error(`database migration failed: ${cause}`);
  }
}
