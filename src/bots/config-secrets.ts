import type { SecretBox } from '../security/secret-box.js';
import type { BotConfigRow, BotConfigsRepo } from '../store/bot-configs-repo.js';
import type { TelephonyConfigBody } from './bot-config-schema.js';

/** A configuration as kept, provider keys apart (they have a column of their own). */
export type StoredBody = Omit<TelephonyConfigBody, 'api_keys'>;

/** The body as `body_json` holds it: no secret in it; the status callback without its hmac. */
export type RowBody = Omit<StoredBody, 'webhook_secret' | 'status_callback'> & { status_callback?: { url: string } };

/** What `secrets_sealed` holds, sealed: every secret a receiver checks our signatures with. */
export interface ConfigSecrets {
  webhook_secret?: string;
  status_callback_hmac?: string;
}

/** The body a row was written with before its secrets had a column of their own. */
type LegacyRowBody = Omit<StoredBody, 'webhook_secret'> & { webhook_secret_sealed?: string };

/** Splits a body into what `body_json` keeps and the secrets to seal. */
export function splitSecrets(body: StoredBody): { rest: RowBody; secrets: ConfigSecrets } {
  const { webhook_secret, status_callback, ...others } = body;
  const rest: RowBody = { ...others, ...(status_callback ? { status_callback: { url: status_callback.url } } : {}) };
  const secrets: ConfigSecrets = {
    ...(webhook_secret ? { webhook_secret } : {}),
    ...(status_callback ? { status_callback_hmac: status_callback.hmac } : {}),
  };
  return { rest, secrets };
}

/** The body with its secrets back in place. */
export function joinSecrets(rest: RowBody, secrets: ConfigSecrets): StoredBody {
  const { status_callback, ...others } = rest;
  return {
    ...others,
    ...(secrets.webhook_secret ? { webhook_secret: secrets.webhook_secret } : {}),
    ...(status_callback && secrets.status_callback_hmac
      ? { status_callback: { url: status_callback.url, hmac: secrets.status_callback_hmac } }
      : {}),
  };
}

/** `secrets_sealed` for these secrets: null when there are none. */
export function sealSecrets(box: SecretBox, secrets: ConfigSecrets): string | null {
  return Object.keys(secrets).length === 0 ? null : box.seal(JSON.stringify(secrets));
}

/**
 * A row's body with its secrets: from `secrets_sealed`, or, for a row not yet moved (written
 * before the column, read before sealConfigSecrets ran), from the body itself.
 */
export function storedBodyOf(box: SecretBox, row: BotConfigRow): StoredBody {
  if (row.secretsSealed) {
    const secrets = JSON.parse(box.open(row.secretsSealed)) as ConfigSecrets;
    return joinSecrets(JSON.parse(row.bodyJson) as RowBody, secrets);
  }
  const { webhook_secret_sealed, ...rest } = JSON.parse(row.bodyJson) as LegacyRowBody;
  return { ...rest, ...(webhook_secret_sealed ? { webhook_secret: box.open(webhook_secret_sealed) } : {}) };
}

/**
 * The data half of migration 0010: rows written before it keep a status callback's hmac in the
 * clear in body_json (and the webhook secret sealed inside it, where a key rotation never reached
 * it). Each moves to `secrets_sealed`, sealed with the current key, its body rewritten without
 * them. Runs at every start once the secret key is loaded (the schema migration runs before);
 * idempotent, and a row another node rewrote meanwhile is left to that node's write. Returns how
 * many rows it sealed; a row whose sealed webhook secret this key cannot open is left as it was
 * and named in `unreadable` (its reads fail the same way, with the key-mismatch error).
 */
export async function sealConfigSecrets(
  repo: BotConfigsRepo,
  box: SecretBox,
): Promise<{ sealed: number; unreadable: string[] }> {
  let sealed = 0;
  const unreadable: string[] = [];
  for (const row of await repo.withSecretsInBody()) {
    let body: StoredBody;
    try {
      body = storedBodyOf(box, row);
    } catch {
      unreadable.push(row.id);
      continue;
    }
    const { rest, secrets } = splitSecrets(body);
    const secretsSealed = sealSecrets(box, secrets);
    if (secretsSealed && (await repo.moveSecrets(row, JSON.stringify(rest), secretsSealed))) sealed += 1;
  }
  return { sealed, unreadable };
}
