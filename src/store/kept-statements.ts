import type BetterSqlite3 from 'better-sqlite3';
import type { SqliteDatabase, SqliteStatement } from 'kysely';

/**
 * The connection Kysely uses, with one prepared statement per SQL text, kept for the life of the
 * process. Why: from Node 24.19, better-sqlite3 12's statement destructor checks that a Node
 * environment is current, which it is not when V8 collects a statement outside JavaScript (an
 * idle-time garbage collection), and the process aborts. A statement that is never collected never
 * runs that destructor. Kysely's SQL is a small set of texts (values travel as parameters), so the
 * map stays small, and re-preparing each query is saved too. Statements are kept even after
 * close(): dropping them then would only move the collection to the process's last seconds.
 */
export function keptStatements(sqlite: BetterSqlite3.Database): SqliteDatabase {
  const statements = new Map<string, SqliteStatement>();
  return {
    prepare(sql: string): SqliteStatement {
      let statement = statements.get(sql);
      if (!statement) {
        statement = sqlite.prepare(sql);
        statements.set(sql, statement);
      }
      return statement;
    },
    close: () => sqlite.close(),
  };
}
