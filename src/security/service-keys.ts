import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { AppConfig } from '../config/env.js';
import type { OpenedDatabase } from '../store/database.js';
import { ServiceKeysRepo } from '../store/service-keys-repo.js';
import { writeFileOnce } from '../store/write-file-once.js';

export const SERVICE_KEY_BYTES = 32;

/** The keys a server signs and seals with. Every node of one deployment must hold the same ones. */
export interface ServiceKeys {
  /** Seals provider keys and dial-in secrets at rest (SecretBox). */
  secret: Buffer;
  /** Signs recording download links (UrlSigner). */
  linkSigning: Buffer;
  /** Signs room tokens (RoomTokens). */
  roomToken: Buffer;
}

export type ServiceKeyName = keyof ServiceKeys;

/**
 * Where each key comes from, first match wins: its environment variable; on PostgreSQL, its row
 * in `service_keys` (created by the first node to start); on SQLite, its file in the data dir
 * (created on first start).
 */
export const SERVICE_KEY_SOURCES: Record<ServiceKeyName, { env: string; row: string; file: string }> = {
  secret: { env: 'SWITCHBOARD_SECRET_KEY', row: 'secret', file: 'secret.key' },
  linkSigning: { env: 'SWITCHBOARD_LINK_SIGNING_KEY', row: 'link-signing', file: 'link-signing.key' },
  roomToken: { env: 'SWITCHBOARD_ROOM_TOKEN_KEY', row: 'room-token', file: 'room-token.key' },
};

const NAMES = Object.keys(SERVICE_KEY_SOURCES) as ServiceKeyName[];

function decodeKey(base64: string, where: string): Buffer {
  const key = Buffer.from(base64.trim(), 'base64');
  if (key.length !== SERVICE_KEY_BYTES) throw new Error(`${where} is not a ${SERVICE_KEY_BYTES}-byte base64 key`);
  return key;
}

function newKeyBase64(): string {
  return randomBytes(SERVICE_KEY_BYTES).toString('base64');
}

/** A key file's key, or undefined when there is no such file. */
export function readKeyFile(path: string): Buffer | undefined {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  return decodeKey(text, path);
}

/**
 * Loads a key file, creating it (mode 0600) when missing; a second process starting at the same
 * moment reads the winner's key, never a half-written one (writeFileOnce).
 */
export function readOrCreateKeyFile(path: string): Buffer {
  const existing = readKeyFile(path);
  if (existing) return existing;
  writeFileOnce(path, `${newKeyBase64()}\n`);
  return decodeKey(readFileSync(path, 'utf8'), path);
}

/** The server's keys, from the environment, the PostgreSQL store or the data dir (see SERVICE_KEY_SOURCES). */
export async function loadServiceKeys(
  config: Pick<AppConfig, 'dataDir' | 'serviceKeys'>,
  database: OpenedDatabase,
): Promise<ServiceKeys> {
  const repo = new ServiceKeysRepo(database.db);
  const keys: Partial<ServiceKeys> = {};
  for (const name of NAMES) {
    const source = SERVICE_KEY_SOURCES[name];
    const fromEnv = config.serviceKeys[name];
    if (fromEnv) keys[name] = fromEnv;
    else if (database.engine === 'postgres')
      keys[name] = decodeKey(await repo.getOrCreate(source.row, newKeyBase64()), `service_keys.${source.row}`);
    else keys[name] = readOrCreateKeyFile(join(config.dataDir, source.file));
  }
  return keys as ServiceKeys;
}
