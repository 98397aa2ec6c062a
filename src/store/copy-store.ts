import { type Kysely, sql } from 'kysely';
import type { OpenedDatabase } from './database.js';
import type { Database } from './schema.js';
import { StoreError } from './store-error.js';

interface CopiedTable {
  table: keyof Database;
  /** The primary key: rows are read in its order, a batch at a time. */
  key: string;
  /** Has a PostgreSQL sequence (serial `seq`) to move past the copied rows. */
  serial: boolean;
}

/** Every table of the store, parents before children (foreign keys hold at every insert). */
export const COPIED_TABLES: readonly CopiedTable[] = [
  { table: 'accounts', key: 'id', serial: false },
  { table: 'api_keys', key: 'id', serial: false },
  { table: 'bot_configs', key: 'seq', serial: true },
  { table: 'phone_numbers', key: 'seq', serial: true },
  { table: 'dialin_configs', key: 'account_id', serial: false },
  { table: 'recordings', key: 'seq', serial: true },
  { table: 'service_keys', key: 'name', serial: false },
  { table: 'key_fingerprints', key: 'name', serial: false },
  { table: 'call_records', key: 'seq', serial: true },
];

/** Rows per insert: configuration bodies can be large, and PostgreSQL takes at most 65535 parameters. */
const BATCH_ROWS = 200;

export interface CopyOptions {
  /** Empty the target's tables first; without it a target holding any row is refused. */
  replace: boolean;
  /** Keys to store in `service_keys` (row name → base64), e.g. the source data dir's key files. */
  serviceKeys: Record<string, string>;
}

/** Rows copied per table. */
export type CopyCounts = Record<keyof Database, number>;

// The copy walks tables by name, which Kysely's typed builder cannot follow; rows pass through as they are.
// biome-ignore lint/suspicious/noExplicitAny: tables are named at run time, see above.
type AnyDb = Kysely<any>;

async function countRows(db: AnyDb, table: string): Promise<number> {
  const row = await db
    .selectFrom(table)
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/**
 * Copies one store into another in a single transaction of the target: every row of every table
 * with its ids, `seq` (so list order and cursors carry over) and sealed values unchanged, then the
 * given service keys. Both stores must be at the latest schema (openDatabase sees to that).
 */
export async function copyStore(
  source: OpenedDatabase,
  target: OpenedDatabase,
  options: CopyOptions,
): Promise<CopyCounts> {
  const from = source.db as AnyDb;
  const known = new Set<string>(COPIED_TABLES.map((t) => t.table));
  const unknown = (await source.db.introspection.getTables()).map((t) => t.name).filter((name) => !known.has(name));
  if (unknown.length > 0) {
    throw new StoreError(
      `the source has tables this version does not know (${unknown.join(', ')}); copy with the version that wrote it`,
    );
  }

  return target.db.transaction().execute(async (trx) => {
    const to = trx as AnyDb;
    const present: string[] = [];
    for (const { table } of COPIED_TABLES) {
      const n = await countRows(to, table);
      if (n > 0) present.push(`${table}: ${n}`);
    }
    if (present.length > 0 && !options.replace) {
      throw new StoreError(
        `the target is not empty (${present.join(', ')}); copy into an empty database, or pass --replace to empty it first`,
      );
    }
    if (options.replace) {
      for (const { table } of [...COPIED_TABLES].reverse()) await to.deleteFrom(table).execute();
    }

    const counts = {} as CopyCounts;
    for (const { table, key, serial } of COPIED_TABLES) {
      counts[table] = 0;
      let last: unknown;
      for (;;) {
        let query = from.selectFrom(table).selectAll().orderBy(key).limit(BATCH_ROWS);
        if (last !== undefined) query = query.where(key, '>', last);
        const rows = await query.execute();
        if (rows.length === 0) break;
        await to.insertInto(table).values(rows).execute();
        counts[table] += rows.length;
        last = rows[rows.length - 1]![key];
      }
      if (serial && target.engine === 'postgres') {
        // New rows must come after the copied ones, as they would have in the source.
        await sql`select setval(pg_get_serial_sequence(${table}, 'seq'), coalesce((select max(seq) from ${sql.table(table)}), 0) + 1, false)`.execute(
          trx,
        );
      }
    }

    for (const [name, keyBase64] of Object.entries(options.serviceKeys)) {
      await trx
        .insertInto('service_keys')
        .values({ name, key_base64: keyBase64, created_at: new Date().toISOString() })
        .onConflict((c) => c.column('name').doUpdateSet({ key_base64: keyBase64 }))
        .execute();
    }
    return counts;
  });
}
