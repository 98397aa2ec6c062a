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
  /**
   * The configuration's signing secrets (`webhook_secret`, `status_callback.hmac`) as JSON, sealed
   * like the keys; null when it has none. Absent from body_json.
   */
  secrets_sealed: string | null;
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

export interface RecordingsTable {
  seq: Generated<number>;
  id: string;
  account_id: string;
  room_name: string;
  /** One id per recorded session (the spec's mtgSessionId). */
  mtg_session_id: string;
  /** Unix seconds at the start of the recording. */
  start_ts: number;
  /** `in-progress`, `finished` or `canceled`. */
  status: string;
  max_participants: number;
  /** Whole seconds; null while in progress. */
  duration_secs: number | null;
  /** The per-track files (caller, bot) as JSON; null until finished. */
  tracks_json: string | null;
  /** Key of the mixed file: under the recordings dir, and in the bucket once uploaded. */
  s3_key: string;
  /** `local` (files in the data dir) or `bucket` (uploaded to recording_settings.recordings_bucket). */
  storage: string;
  /** recording_settings.recordings_bucket as JSON, when the configuration named one. */
  bucket_json: string | null;
  created_at: string;
  finished_at: string | null;
  /** The data dir (store/data-dir-id.ts) holding the files; null for rows from before it was kept. */
  node_id: string | null;
}

export interface CallRecordsTable {
  seq: Generated<number>;
  id: string;
  account_id: string;
  /** `phone` (a carrier call answered by a bot) or `room` (a room, with its browser and phone legs). */
  kind: string;
  bot_config_id: string | null;
  profile: string;
  /** E.164 or the carrier's caller id, when the carrier told. */
  from_number: string | null;
  to_number: string | null;
  call_sid: string | null;
  room_name: string | null;
  recording_id: string | null;
  /** The node serving the call: whoever reaps it marks its rows left in progress. */
  node_id: string;
  /** `in-progress`, `ended`, or `interrupted` (the node serving it died). */
  status: string;
  /** ISO-8601 UTC, fixed width, so text order is time order. */
  started_at: string;
  ended_at: string | null;
  duration_ms: number | null;
  /** Who ended the call and why (calls/call-outcome.ts). */
  outcome: string | null;
  /** The close reason as the call saw it. */
  end_reason: string | null;
  /** Counters (turns, barge-ins, ...) as JSON. */
  summary_json: string | null;
  /** The per-turn latency breakdown as JSON. */
  turns_json: string | null;
  /** The transcript as JSON; null when the configuration turned transcripts off. */
  transcript_json: string | null;
}

/** Keys every node shares, on the PostgreSQL store (security/service-keys.ts names them). */
export interface ServiceKeysTable {
  name: string;
  /** 32 random bytes, base64. */
  key_base64: string;
  created_at: string;
}

/**
 * Each service key's fingerprint (security/key-fingerprint.ts), recorded when the store first
 * used the key: a node whose key gives another one refuses to start. Never the key itself.
 */
export interface KeyFingerprintsTable {
  /** The key's name, as in service_keys (`secret`, `link-signing`, `room-token`). */
  name: string;
  /** HMAC-SHA256 of a fixed label under the key, hex. */
  fingerprint: string;
  updated_at: string;
}

export interface Database {
  accounts: AccountsTable;
  api_keys: ApiKeysTable;
  bot_configs: BotConfigsTable;
  phone_numbers: PhoneNumbersTable;
  dialin_configs: DialinConfigsTable;
  recordings: RecordingsTable;
  service_keys: ServiceKeysTable;
  key_fingerprints: KeyFingerprintsTable;
  call_records: CallRecordsTable;
}
