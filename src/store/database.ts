import { chmodSync, closeSync, existsSync, mkdirSync, openSync } from 'node:fs';
import { join } from 'node:path';
import SqliteDatabase from 'better-sqlite3';
import { Kysely, SqliteDialect } from 'kysely';
import { PRIVATE_DIR_MODE, PRIVATE_FILE_MODE } from '../security/private-files.js';
import { keptStatements } from './kept-statements.js';
import { migrateToLatest } from './migrations.js';
import type { Database } from './schema.js';

export interface OpenedDatabase {
  db: Kysely<Database>;
  /** Cheap liveness probe for /healthz. */
  ping(): boolean;
  close(): Promise<void>;
}

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
      // Someone else's file we may still write (a shared volume): the store opens as before.
    }
  }
}

/**
 * Opens (creating if needed) the SQLite store in the data dir and runs migrations.
 * WAL lets readers proceed during writes; synchronous=FULL makes a commit durable before the
 * HTTP 200 goes out, so acknowledged writes survive kill -9 and power loss alike.
 */
export async function openDatabase(dataDir: string): Promise<OpenedDatabase> {
  mkdirSync(dataDir, { recursive: true, mode: PRIVATE_DIR_MODE });
  const path = join(dataDir, 'switchboard.sqlite');
  makePrivate(path);
  const sqlite = new SqliteDatabase(path);
  // exec, not pragma(): pragma() prepares a statement that would be garbage-collected (kept-statements.ts).
  sqlite.exec('PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON; PRAGMA busy_timeout = 5000');
  const connection = keptStatements(sqlite);
  const db = new Kysely<Database>({ dialect: new SqliteDialect({ database: connection }) });
  await migrateToLatest(db as Kysely<unknown>);
  const probe = connection.prepare('select 1 as ok');
  return {
    db,
    ping: () => {
      try {
        return (probe.all([])[0] as { ok: number } | undefined)?.ok === 1;
      } catch {
        return false;
      }
    },
    close: () => db.destroy(),
  };
}
