import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import SqliteDatabase from 'better-sqlite3';
import { Kysely, SqliteDialect } from 'kysely';
import { migrateToLatest } from './migrations.js';
import type { Database } from './schema.js';

export interface OpenedDatabase {
  db: Kysely<Database>;
  /** Cheap liveness probe for /healthz. */
  ping(): boolean;
  close(): Promise<void>;
}

/**
 * Opens (creating if needed) the SQLite store in the data dir and runs migrations.
 * WAL lets readers proceed during writes; synchronous=FULL makes a commit durable before the
 * HTTP 200 goes out, so acknowledged writes survive kill -9 and power loss alike.
 */
export async function openDatabase(dataDir: string): Promise<OpenedDatabase> {
  mkdirSync(dataDir, { recursive: true });
  const sqlite = new SqliteDatabase(join(dataDir, 'switchboard.sqlite'));
  sqlite.pragma('journal_mode = WAL');
  sqlite.pragma('synchronous = FULL');
  sqlite.pragma('foreign_keys = ON');
  sqlite.pragma('busy_timeout = 5000');
  const db = new Kysely<Database>({ dialect: new SqliteDialect({ database: sqlite }) });
  await migrateToLatest(db as Kysely<unknown>);
  const probe = sqlite.prepare('select 1 as ok');
  return {
    db,
    ping: () => {
      try {
        return (probe.get() as { ok: number } | undefined)?.ok === 1;
      } catch {
        return false;
      }
    },
    close: () => db.destroy(),
  };
}
