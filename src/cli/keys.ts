import type { AppConfig } from '../config/env.js';
import { AccountsRepo, DEFAULT_ACCOUNT_NAME } from '../store/accounts-repo.js';
import { openDatabase } from '../store/database.js';
import { USAGE_EXIT, UsageError, parseCommandLine, usageLine } from './usage.js';

const HELP = `usage: switchboard keys <command>

Manages the API keys in the server's store (DATABASE_URL, or SWITCHBOARD_DATA_DIR); a running server sees changes at once.

commands:
  create [--account NAME] [--name LABEL]   create a key (printed once) for an account, default "default"
  list                                     list stored keys (id, prefix, account, state)
  revoke <key-id>                          revoke a stored key

switchboard keys <command> --help shows each command's usage.
`;

const SUBCOMMAND_HELP = {
  create: `usage: switchboard keys create [--account NAME] [--name LABEL]

Creates an API key and prints it once; only its hash is stored.

options:
  --account <name>   the account the key belongs to (created if new; default "default")
  --name <label>     a label shown by keys list
  -h, --help         show this text
`,
  list: `usage: switchboard keys list

Lists the stored API keys: id, prefix, account, when created, active or revoked.
`,
  revoke: `usage: switchboard keys revoke <key-id>

Revokes a stored API key (the id from keys list or keys create); requests with it get 401.
`,
} as const;

type Action =
  | { kind: 'help'; text: string }
  | { kind: 'create'; account: string; name: string | null }
  | { kind: 'list' }
  | { kind: 'revoke'; id: string };

function parseKeysArgs(argv: string[]): Action | 'bare' {
  const [first, ...rest] = argv;
  if (first === undefined) return 'bare';
  if (first === '--help' || first === '-h' || first === 'help') return { kind: 'help', text: HELP };
  if (first.startsWith('-')) {
    // An option before the subcommand: parse to report it in Node's words.
    parseCommandLine({ args: [first], strict: true, options: { help: { type: 'boolean', short: 'h' } } });
  }
  const help = { help: { type: 'boolean', short: 'h' } } as const;
  switch (first) {
    case 'create': {
      const { values } = parseCommandLine({
        args: rest,
        strict: true,
        allowPositionals: false,
        options: { account: { type: 'string' }, name: { type: 'string' }, ...help },
      });
      if (values.help) return { kind: 'help', text: SUBCOMMAND_HELP.create };
      return { kind: 'create', account: values.account ?? DEFAULT_ACCOUNT_NAME, name: values.name ?? null };
    }
    case 'list': {
      const { values } = parseCommandLine({ args: rest, strict: true, allowPositionals: false, options: help });
      return values.help ? { kind: 'help', text: SUBCOMMAND_HELP.list } : { kind: 'list' };
    }
    case 'revoke': {
      const { values, positionals } = parseCommandLine({
        args: rest,
        strict: true,
        allowPositionals: true,
        options: help,
      });
      if (values.help) return { kind: 'help', text: SUBCOMMAND_HELP.revoke };
      if (positionals.length === 0) throw new UsageError('missing the key id; switchboard keys list shows the ids');
      if (positionals.length > 1) throw new UsageError(`Unexpected argument '${positionals[1]}'`);
      return { kind: 'revoke', id: positionals[0]! };
    }
    default:
      throw new UsageError(`unknown keys command "${first}"; the commands are create, list and revoke`);
  }
}

/**
 * `switchboard keys create|list|revoke`, against the server's store (DATABASE_URL, or SWITCHBOARD_DATA_DIR). The command
 * line is checked before the configuration is loaded or the store opened, so help and misuse
 * touch nothing.
 */
export async function runKeys(argv: string[], loadConfig: () => AppConfig): Promise<number> {
  let action: Action | 'bare';
  try {
    action = parseKeysArgs(argv);
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    // The hint names the subcommand whose --help covers the mistake.
    const command = argv[0] !== undefined && Object.hasOwn(SUBCOMMAND_HELP, argv[0]) ? `keys ${argv[0]}` : 'keys';
    process.stderr.write(usageLine(command, err.message));
    return USAGE_EXIT;
  }
  if (action === 'bare') {
    process.stderr.write(HELP);
    return USAGE_EXIT;
  }
  if (action.kind === 'help') {
    process.stdout.write(action.text);
    return 0;
  }
  const config = loadConfig();
  const database = await openDatabase(config.dataDir, config.databaseUrl);
  try {
    const accounts = new AccountsRepo(database.db);
    switch (action.kind) {
      case 'create': {
        const { key, record } = await accounts.createKey(action.account, action.name);
        process.stdout.write(`created key ${record.id} for account "${action.account}" (shown only once):\n${key}\n`);
        return 0;
      }
      case 'list': {
        const keys = await accounts.listKeys();
        if (keys.length === 0) {
          process.stdout.write('no stored keys\n');
          return 0;
        }
        for (const k of keys) {
          const state = k.revokedAt ? `revoked ${k.revokedAt}` : 'active';
          process.stdout.write(
            `${k.id}  ${k.prefix}…  account=${k.accountName}  created=${k.createdAt}  ${state}${k.name ? `  (${k.name})` : ''}\n`,
          );
        }
        return 0;
      }
      case 'revoke': {
        if (!(await accounts.revokeKey(action.id))) {
          process.stderr.write(`no active key with id ${action.id}\n`);
          return 1;
        }
        process.stdout.write(`revoked ${action.id}\n`);
        return 0;
      }
    }
  } finally {
    await database.close();
  }
}
