import { existsSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { parseArgs } from 'node:util';
import { isPostgresUrl } from '../config/env.js';
import { SERVICE_KEY_SOURCES, readKeyFile } from '../security/service-keys.js';
import { COPIED_TABLES, copyStore } from '../store/copy-store.js';
import { type OpenedDatabase, SQLITE_FILE_NAME, openSqliteFile } from '../store/database.js';
import { openPostgres, redactDatabaseUrl } from '../store/postgres.js';
import { StoreError } from '../store/store-error.js';

export const DB_USAGE = `usage: switchboard db copy --from <data dir | sqlite file> --to <postgres://…> [--replace]

Copies a SQLite store into a PostgreSQL database, for running Switchboard as several nodes:
every table, with ids, list order and sealed provider keys as they are, and the key files of the
data dir (secret.key, link-signing.key, room-token.key) into the database, where every node
finds them. Both stores get the current schema first; the target must be empty. Stop the
server that uses the SQLite store first.

options:
  --from PATH   the SQLite store: its data dir (holding ${SQLITE_FILE_NAME}) or the file itself
  --to URL      the PostgreSQL database, postgres://user:password@host:port/database
  --replace     empty the target's tables first (everything in them is lost)
  -h, --help    show this text
`;

interface Streams {
  out: NodeJS.WritableStream;
  err: NodeJS.WritableStream;
}

function usageError(streams: Streams, message: string): number {
  streams.err.write(`switchboard db: ${message}\n\n${DB_USAGE}`);
  return 2;
}

/** The SQLite file and the data dir whose key files go with it. */
function locateSqliteStore(path: string): { file: string; dataDir: string } {
  if (!existsSync(path)) throw new StoreError(`no SQLite store at ${path}`);
  if (statSync(path).isDirectory()) return { file: join(path, SQLITE_FILE_NAME), dataDir: path };
  return { file: path, dataDir: dirname(path) };
}

/** `switchboard db copy`: moves an existing SQLite store into PostgreSQL. */
export async function runDb(
  argv: string[],
  streams: Streams = { out: process.stdout, err: process.stderr },
): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      strict: true,
      options: {
        from: { type: 'string' },
        to: { type: 'string' },
        replace: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
    });
  } catch (err) {
    return usageError(streams, (err as Error).message);
  }
  const { positionals, values } = parsed;
  if (values.help || positionals[0] === 'help') {
    streams.out.write(DB_USAGE);
    return 0;
  }
  if (positionals[0] !== 'copy')
    return usageError(streams, positionals[0] ? `unknown subcommand "${positionals[0]}"` : 'missing subcommand');
  if (positionals.length > 1) return usageError(streams, `unexpected argument "${positionals[1]}"`);
  if (!values.from) return usageError(streams, 'missing --from <data dir | sqlite file>');
  if (!values.to) return usageError(streams, 'missing --to <postgres://…>');
  if (!isPostgresUrl(values.to))
    return usageError(
      streams,
      `--to must be a postgres:// or postgresql:// URL, not "${redactDatabaseUrl(values.to)}"`,
    );

  let source: OpenedDatabase | undefined;
  let target: OpenedDatabase | undefined;
  try {
    const { file, dataDir } = locateSqliteStore(values.from);
    source = await openSqliteFile(file, { mustExist: true });
    const serviceKeys: Record<string, string> = {};
    const found: string[] = [];
    for (const { row, file: keyFile } of Object.values(SERVICE_KEY_SOURCES)) {
      const key = readKeyFile(join(dataDir, keyFile));
      if (!key) continue;
      serviceKeys[row] = key.toString('base64');
      found.push(keyFile);
    }
    target = await openPostgres(values.to);
    const counts = await copyStore(source, target, { replace: values.replace ?? false, serviceKeys });

    streams.out.write(`copied ${file} into ${redactDatabaseUrl(values.to)}:\n`);
    for (const { table } of COPIED_TABLES) streams.out.write(`  ${table.padEnd(16)}${counts[table]}\n`);
    streams.out.write(`  key files       ${found.length > 0 ? found.join(', ') : 'none'}\n`);
    if (!serviceKeys[SERVICE_KEY_SOURCES.secret.row] && counts.bot_configs + counts.dialin_configs > 0) {
      streams.err.write(
        `switchboard db: warning: ${dataDir} has no ${SERVICE_KEY_SOURCES.secret.file}; sealed provider keys were copied as they are and open ` +
          `only with the key that sealed them: give it to every node as ${SERVICE_KEY_SOURCES.secret.env}\n`,
      );
    }
    return 0;
  } catch (err) {
    if (!(err instanceof StoreError)) throw err;
    streams.err.write(`switchboard db: ${err.message}\n`);
    return 1;
  } finally {
    await source?.close();
    await target?.close();
  }
}
