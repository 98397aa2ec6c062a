import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import SqliteDatabase from 'better-sqlite3';
import { Kysely, SqliteDialect } from 'kysely';
import { migrateToLatest } from './migrations.js';
import { openPostgres } from './postgres.js';
import type { Database } from './schema.js';
import { StoreError } from './store-error.js';

export type StoreEngine = 'sqlite' | 'postgres';

export interface OpenedDatabase {
  db: Kysely<Database>;
  engine: StoreEngine;
  /** Cheap liveness probe for /healthz. */
  ping(): Promise<boolean>;
  close(): Promise<void>;
}

/** The SQLite store's file inside a data dir. */
export const SQLITE_FILE_NAME = 'switchboard.sqlite';

/**
 * Opens the store and brings it to the latest schema: PostgreSQL when `databaseUrl` is given
 * (every node of a deployment shares it), otherwise SQLite in the data dir (created if needed).
 */
export async function openDatabase(dataDir: string, databaseUrl?: string): Promise<OpenedDatabase> {
  if (databaseUrl) return openPostgres(databaseUrl);
  mkdirSync(dataDir, { recursive: true });
  return openSqliteFile(join(dataDir, SQLITE_FILE_NAME));
}

/**
 * Opens a SQLite store file. WAL lets readers proceed during writes; synchronous=FULL makes a
 * commit durable before the HTTP 200 goes out, so acknowledged writes survive kill -9 and power
 * loss alike. `mustExist` is for reading someone's store (db copy): a typo must not create one.
 */
export async function openSqliteFile(path: string, options: { mustExist?: boolean } = {}): Promise<OpenedDatabase> {
  if (options.mustExist && !existsSync(path)) throw new StoreError(`no SQLite store at ${path}`);
  const sqlite = new SqliteDatabase(path, { fileMustExist: options.mustExist ?? false });
  let db: Kysely<Database> | undefined;
  try {
    sqlite.pragma('journal_mode = WAL');
    sqlite.pragma('synchronous = FULL');
    sqlite.pragma('foreign_keys = ON');
    sqlite.pragma('busy_timeout = 5000');
    db = new Kysely<Database>({ dialect: new SqliteDialect({ database: sqlite }) });
    await migrateToLatest(db as Kysely<unknown>);
  } catch (err) {
    if (db) await db.destroy();
    else sqlite.close();
    // better-sqlite3 opens any file; the first statement tells whether it is a database.
    if ((err as { code?: string }).code === 'SQLITE_NOTADB') throw new StoreError(`${path} is not a SQLite store: ${(err as Error).message}`);
    throw err;
  }
  const probe = sqlite.prepare('select 1 as ok');
  return {
    db,
    engine: 'sqlite',
    ping: async () => {
      try {
        return (probe.get() as { ok: number } | undefined)?.ok === 1;
      } catch {
        return false;
      }
    },
    close: () => db.destroy(),
  };
}
