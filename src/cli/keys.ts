import { parseArgs } from 'node:util';
import type { AppConfig } from '../config/env.js';
import { AccountsRepo, DEFAULT_ACCOUNT_NAME } from '../store/accounts-repo.js';
import { openDatabase } from '../store/database.js';

/** `switchboard keys create|list|revoke`, against the server's store (DATABASE_URL, or SWITCHBOARD_DATA_DIR). */
export async function runKeys(config: AppConfig, argv: string[]): Promise<number> {
  const { positionals, values } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: { account: { type: 'string' }, name: { type: 'string' } },
  });
  const [action, ...args] = positionals;
  const database = await openDatabase(config.dataDir, config.databaseUrl);
  try {
    const accounts = new AccountsRepo(database.db);
    switch (action) {
      case 'create': {
        const accountName = values.account ?? DEFAULT_ACCOUNT_NAME;
        const { key, record } = await accounts.createKey(accountName, values.name ?? null);
        process.stdout.write(`created key ${record.id} for account "${accountName}" (shown only once):\n${key}\n`);
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
          process.stdout.write(`${k.id}  ${k.prefix}…  account=${k.accountName}  created=${k.createdAt}  ${state}${k.name ? `  (${k.name})` : ''}\n`);
        }
        return 0;
      }
      case 'revoke': {
        const id = args[0];
        if (!id) {
          process.stderr.write('usage: switchboard keys revoke <key-id>\n');
          return 2;
        }
        if (!(await accounts.revokeKey(id))) {
          process.stderr.write(`no active key with id ${id}\n`);
          return 1;
        }
        process.stdout.write(`revoked ${id}\n`);
        return 0;
      }
      default:
        process.stderr.write('usage: switchboard keys create [--account NAME] [--name LABEL] | list | revoke <key-id>\n');
        return 2;
    }
  } finally {
    await database.close();
  }
}
