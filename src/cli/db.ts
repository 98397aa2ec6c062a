import { existsSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { parseArgs } from 'node:util';
import { type AppConfig, isPostgresUrl, loadConfig } from '../config/env.js';
import { KeyRotationError, rotateKey } from '../security/key-rotation.js';
import {
  SERVICE_KEY_NAMES,
  SERVICE_KEY_SOURCES,
  type ServiceKeyName,
  readKeyFileKeys,
} from '../security/service-keys.js';
import { COPIED_TABLES, copyStore } from '../store/copy-store.js';
import { type OpenedDatabase, SQLITE_FILE_NAME, openDatabase, openSqliteFile } from '../store/database.js';
import { openPostgres, redactDatabaseUrl } from '../store/postgres.js';
import { StoreError } from '../store/store-error.js';

export const DB_USAGE = `usage: switchboard db copy --from <data dir | sqlite file> --to <postgres://…> [--replace]
       switchboard db rotate-key <secret | link-signing | room-token> [--new-key BASE64]

copy: copies a SQLite store into a PostgreSQL database, for running Switchboard as several
nodes: every table, with ids, list order and sealed provider keys as they are, and the key files
of the data dir (secret.key, link-signing.key, room-token.key) into the database, where every
node finds them. Both stores get the current schema first; the target must be empty. Stop the
server that uses the SQLite store first.

rotate-key: changes one of the store's keys on purpose, on the server's store (DATABASE_URL, or
SWITCHBOARD_DATA_DIR) and with the nodes running. The secret key is rotated in steps that keep
every sealed value readable on every node: the new key joins the old one, the nodes start
sealing with it, every value is sealed again with it, then the old key is dropped. A key set in
the environment stays the operator's: give every node (and this command)
SWITCHBOARD_SECRET_KEY=<new>,<old> first. The link-signing and room-token keys are replaced; the
nodes take the new one up when restarted, and links or room tokens signed with the old one are
refused from then on.

options:
  --from PATH       copy: the SQLite store, its data dir (holding ${SQLITE_FILE_NAME}) or the file itself
  --to URL          copy: the PostgreSQL database, postgres://user:password@host:port/database
  --replace         copy: empty the target's tables first (everything in them is lost)
  --new-key BASE64  rotate-key: the new key (openssl rand -base64 32); without it a stored key
                    gets a random one
  -h, --help        show this text

Exit status: 0 done, 1 the store refused (unreachable, not empty, a rotation that cannot go ahead),
2 a mistake on the command line, 3 this command's key is not the store's (see serve).
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

/** The key names the command line takes: the rows' names. */
const ROTATABLE: Record<string, ServiceKeyName> = Object.fromEntries(
  SERVICE_KEY_NAMES.map((name) => [SERVICE_KEY_SOURCES[name].row, name]),
);

/** `switchboard db copy | rotate-key`. */
export async function runDb(
  argv: string[],
  streams: Streams = { out: process.stdout, err: process.stderr },
  loadServerConfig: () => AppConfig = () => loadConfig(),
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
        'new-key': { type: 'string' },
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
  if (positionals[0] === 'rotate-key') {
    if (values.from || values.to || values.replace)
      return usageError(streams, 'rotate-key takes no --from, --to or --replace');
    const keyName = positionals[1];
    if (keyName === undefined) return usageError(streams, 'rotate-key: which key? secret, link-signing or room-token');
    const name = ROTATABLE[keyName];
    if (!name)
      return usageError(
        streams,
        `rotate-key: unknown key "${keyName}"; the keys are secret, link-signing and room-token`,
      );
    if (positionals.length > 2) return usageError(streams, `unexpected argument "${positionals[2]}"`);
    let newKey: Buffer | undefined;
    if (values['new-key'] !== undefined) {
      newKey = Buffer.from(values['new-key'], 'base64');
      if (!/^[A-Za-z0-9+/]+=*$/.test(values['new-key']) || newKey.length !== 32)
        return usageError(streams, '--new-key must be 32 bytes in base64 (openssl rand -base64 32)');
    }
    return rotate(streams, loadServerConfig(), name, newKey);
  }
  if (values['new-key'] !== undefined) return usageError(streams, '--new-key belongs to rotate-key');
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
  return copy(streams, values.from, values.to, values.replace ?? false);
}

/** `switchboard db copy`: moves an existing SQLite store into PostgreSQL. */
async function copy(streams: Streams, from: string, to: string, replace: boolean): Promise<number> {
  let source: OpenedDatabase | undefined;
  let target: OpenedDatabase | undefined;
  try {
    const { file, dataDir } = locateSqliteStore(from);
    source = await openSqliteFile(file, { mustExist: true });
    const serviceKeys: Record<string, string> = {};
    const found: string[] = [];
    for (const { row, file: keyFile } of Object.values(SERVICE_KEY_SOURCES)) {
      // Two keys while the secret key is being rotated: both go, as the file holds them.
      const keys = readKeyFileKeys(join(dataDir, keyFile));
      if (!keys) continue;
      serviceKeys[row] = keys.map((key) => key.toString('base64')).join(',');
      found.push(keyFile);
    }
    target = await openPostgres(to);
    const counts = await copyStore(source, target, { replace, serviceKeys });

    streams.out.write(`copied ${file} into ${redactDatabaseUrl(to)}:\n`);
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

/** `switchboard db rotate-key`: see security/key-rotation.ts. A key mismatch goes up to main (exit 3). */
async function rotate(streams: Streams, config: AppConfig, name: ServiceKeyName, newKey?: Buffer): Promise<number> {
  const database = await openDatabase(config.dataDir, config.databaseUrl);
  try {
    const result = await rotateKey(config, database, name, {
      newKey,
      say: (line) => streams.out.write(`${line}\n`),
    });
    return result.unreadable.length > 0 ? 1 : 0;
  } catch (err) {
    if (!(err instanceof KeyRotationError)) throw err;
    streams.err.write(`switchboard db: ${err.message}\n`);
    return 1;
  } finally {
    await database.close();
  }
}
