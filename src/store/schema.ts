import type { Generated } from 'kysely';

/** Tables as Kysely sees them. Timestamps are ISO-8601 UTC strings; JSON columns are text. */
export interface AccountsTable {
  id: string;
  name: string;
  /** The spec's "domain": the id under which the account's resources are addressed. */
  domain_id: string;
  created_at: string;
}

export interface ApiKeysTable {
  id: string;
  account_id: string;
  name: string | null;
  /** sha256 of the key, hex. The key itself is never stored. */
  key_hash: string;
  /** First characters of the key, so operators can tell keys apart in `keys list`. */
  key_prefix: string;
  created_at: string;
  revoked_at: string | null;
}

export interface BotConfigsTable {
  /** Insertion order; list cursors compare on it. */
  seq: Generated<number>;
  id: string;
  account_id: string;
  /** The validated request body without api_keys, as JSON. */
  body_json: string;
  /** api_keys encrypted with the data dir's secret, or null when there are none. */
  api_keys_sealed: string | null;
  created_at: string;
  updated_at: string;
}

export interface PhoneNumbersTable {
  seq: Generated<number>;
  id: string;
  account_id: string;
  /** E.164. */
  number: string;
  name: string | null;
  region: string;
  city: string;
  /** `sandbox` or `twilio`: who the number was bought from. */
  carrier: string;
  /** The carrier's handle, needed to release it (Twilio's IncomingPhoneNumber sid). */
  carrier_ref: string;
  created_at: string;
}

export interface DialinConfigsTable {
  account_id: string;
  entries_sealed: string;
  updated_at: string;
}

export interface Database {
  accounts: AccountsTable;
  api_keys: ApiKeysTable;
  bot_configs: BotConfigsTable;
  phone_numbers: PhoneNumbersTable;
  dialin_configs: DialinConfigsTable;
}
