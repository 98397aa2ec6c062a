import { chmodSync, closeSync, existsSync, mkdirSync, openSync } from 'node:fs';
import { join } from 'node:path';
import SqliteDatabase from 'better-sqlite3';
import { Kysely, SqliteDialect } from 'kysely';
import { PRIVATE_DIR_MODE, PRIVATE_FILE_MODE } from '../shared/private-files.js';
import { keptStatements } from './kept-statements.js';
import { migrateToLatest } from './migrations.js';
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
 * Creates the store file owner-only before SQLite opens it (SQLite would create it 0644 under the
 * usual umask) and tightens one an older version left readable. SQLite gives the -wal and -shm
 * files the mode of the database file; leftovers of a crash are tightened too.
 */
function makePrivate(path: string): void {
  closeSync(openSync(path, 'a', PRIVATE_FILE_MODE));
  for (const file of [path, `${path}-wal`, `${path}-shm`]) {
    try {
      if (existsSync(file)) chmodSync(file, PRIVATE_FILE_MODE);
    } catch {
      // Someone else's file we may still write (a shared volume): the store opens with the modes it has.
    }
  }
}

/**
 * Opens the store and brings it to the latest schema: PostgreSQL when `databaseUrl` is given
 * (every node of a deployment shares it), otherwise SQLite in the data dir (created if needed,
 * owner-only).
 */
export async function openDatabase(dataDir: string, databaseUrl?: string): Promise<OpenedDatabase> {
  // The PostgreSQL driver loads only for a deployment that names it.
  if (databaseUrl) return (await import('./postgres.js')).openPostgres(databaseUrl);
  mkdirSync(dataDir, { recursive: true, mode: PRIVATE_DIR_MODE });
  const path = join(dataDir, SQLITE_FILE_NAME);
  makePrivate(path);
  return openSqliteFile(path);
}

/**
 * Opens a SQLite store file. WAL lets readers proceed during writes; synchronous=FULL makes a
 * commit durable before the HTTP 200 goes out, so acknowledged writes survive kill -9 and power
 * loss alike. `mustExist` is for reading someone's store (db copy): a typo must not create one.
 */
export async function openSqliteFile(path: string, options: { mustExist?: boolean } = {}): Promise<OpenedDatabase> {
  if (options.mustExist && !existsSync(path)) throw new StoreError(`no SQLite store at ${path}`);
  const sqlite = new SqliteDatabase(path, { fileMustExist: options.mustExist ?? false });
  const connection = keptStatements(sqlite);
  let db: Kysely<Database> | undefined;
  try {
    // exec, not pragma(): pragma() prepares a statement that would be garbage-collected (kept-statements.ts).
    sqlite.exec(
      'PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON; PRAGMA busy_timeout = 5000',
    );
    db = new Kysely<Database>({ dialect: new SqliteDialect({ database: connection }) });
    await migrateToLatest(db as Kysely<unknown>);
  } catch (err) {
    if (db) await db.destroy();
    else sqlite.close();
    // better-sqlite3 opens any file; the first statement tells whether it is a database.
    if ((err as { code?: string }).code === 'SQLITE_NOTADB')
      throw new StoreError(`${path} is not a SQLite store: ${(err as Error).message}`);
    throw err;
  }
  const probe = connection.prepare('select 1 as ok');
  return {
    db,
    engine: 'sqlite',
    ping: async () => {
      try {
        return (probe.all([])[0] as { ok: number } | undefined)?.ok === 1;
      } catch {
        return false;
      }
    },
    close: () => db.destroy(),
  };
}
