import type { Logger } from 'pino';
import { BotConfigService } from '../bots/bot-config-service.js';
import { sealConfigSecrets } from '../bots/config-secrets.js';
import type { AppConfig } from '../config/env.js';
import type { AuthDeps } from '../http/auth.js';
import { SecretBox } from '../security/secret-box.js';
import { type ServiceKeys, loadServiceKeys } from '../security/service-keys.js';
import { AccountsRepo, DEFAULT_ACCOUNT_NAME } from '../store/accounts-repo.js';
import { hashApiKey } from '../store/api-key-hash.js';
import { BotConfigsRepo } from '../store/bot-configs-repo.js';
import type { OpenedDatabase } from '../store/database.js';
import { buildStreamTwiml } from '../telephony/twiml.js';

export interface Accounts {
  /** The deployment's keys: every node on one PostgreSQL store loads the same ones. */
  keys: ServiceKeys;
  /** Seals what the store keeps secret (provider keys in configurations). */
  secrets: SecretBox;
  accounts: AccountsRepo;
  /** Who may call the API: stored keys, and the keys of the environment as the default account. */
  auth: AuthDeps;
  botConfigsRepo: BotConfigsRepo;
  botConfigs: BotConfigService;
}

/** Accounts, their keys and their bot configurations, from the store. */
export async function buildAccounts(config: AppConfig, database: OpenedDatabase, log: Logger): Promise<Accounts> {
  // Checks every key against the store's fingerprint: a node with other keys stops here.
  const keys = await loadServiceKeys(config, database);
  // Follows a rotation of the secret key (switchboard db rotate-key) while the node runs; the app stops it on close.
  keys.secretRing.startRefreshing();
  const secrets = new SecretBox(keys.secretRing);
  const accounts = new AccountsRepo(database.db);
  const defaultAccount = await accounts.ensureAccount(DEFAULT_ACCOUNT_NAME);
  const botConfigsRepo = new BotConfigsRepo(database.db);
  // Migration 0010's data half: it needs the secret key, which is loaded after the schema migrations.
  const moved = await sealConfigSecrets(botConfigsRepo, secrets);
  if (moved.sealed > 0)
    log.info({ configs: moved.sealed }, 'sealed the signing secrets of configurations written before 0010');
  if (moved.unreadable.length > 0)
    log.error(
      { configs: moved.unreadable },
      'configurations whose webhook secret this secret key cannot open were left as they were',
    );
  return {
    keys,
    secrets,
    accounts,
    auth: { accounts, defaultAccount, envKeyHashes: new Set(config.envApiKeys.map(hashApiKey)) },
    botConfigsRepo,
    botConfigs: new BotConfigService(botConfigsRepo, secrets, config.publicUrl, buildStreamTwiml),
  };
}
