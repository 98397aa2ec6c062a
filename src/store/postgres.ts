import { Kysely, PostgresDialect, sql } from 'kysely';
import pg from 'pg';
import type { OpenedDatabase } from './database.js';
import { migrateToLatest } from './migrations.js';
import type { Database } from './schema.js';
import { StoreError } from './store-error.js';

const INT8_OID = 20;

/**
 * `count(*)` and bigint columns (Unix seconds) come back from pg as strings, to be safe beyond
 * 2^53; ours never get near that, and the repositories expect numbers as SQLite gives them.
 */
const types: pg.CustomTypesConfig = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    oid === INT8_OID && format !== 'binary'
      ? (value: string) => Number(value)
      : pg.types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser,
};

/** The URL without its password, for messages and logs. */
export function redactDatabaseUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '****';
    return parsed.toString();
  } catch {
    return '(unparseable URL)';
  }
}

/** Node reports a refused connection to a name with several addresses as an AggregateError with no message. */
export function describeError(err: unknown): string {
  const e = err as { message?: string; code?: string; errors?: unknown[] };
  if (e.message) return e.message;
  if (e.errors?.length) return e.errors.map(describeError).join('; ');
  return e.code ?? String(err);
}

/**
 * Opens the PostgreSQL store through a connection pool and brings it to the latest schema.
 * A commit is durable when PostgreSQL acknowledges it (synchronous_commit, on by default), and
 * a 200 goes out only after that, so acknowledged writes survive a node's kill -9.
 */
export async function openPostgres(url: string): Promise<OpenedDatabase> {
  const pool = new pg.Pool({
    connectionString: url,
    types,
    application_name: 'switchboard',
    // A request must fail, not hang, while the database is unreachable.
    connectionTimeoutMillis: 10_000,
  });
  // A connection the server dropped (restart, failover, terminated backend): the pool discards
  // it, and the query it was running, or the next one, reports the outage. Unlistened, pg emits
  // these as 'error' events that end the process: from idle connections through the pool, from
  // connections in use through the client itself.
  pool.on('error', () => undefined);
  pool.on('connect', (client) => client.on('error', () => undefined));
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
  try {
    await sql`select 1`.execute(db);
  } catch (err) {
    await db.destroy();
    throw new StoreError(`cannot reach the PostgreSQL store at ${redactDatabaseUrl(url)}: ${describeError(err)}`);
  }
  try {
    await migrateToLatest(db as Kysely<unknown>);
  } catch (err) {
    await db.destroy();
    throw err;
  }
  return {
    db,
    engine: 'postgres',
    ping: async () => {
      try {
        await sql`select 1`.execute(db);
        return true;
      } catch {
        return false;
      }
    },
    close: () => db.destroy(),
  };
}
