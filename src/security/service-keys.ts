import { randomBytes } from 'node:crypto';
import { readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { AppConfig } from '../config/env.js';
import type { OpenedDatabase } from '../store/database.js';
import { KeyFingerprintsRepo } from '../store/key-fingerprints-repo.js';
import { SealedValuesRepo } from '../store/sealed-values-repo.js';
import { ServiceKeysRepo } from '../store/service-keys-repo.js';
import { writeFileOnce } from '../store/write-file-once.js';
import { KeyMismatchError, keyFingerprint, shortFingerprint } from './key-fingerprint.js';
import { SecretBox } from './secret-box.js';
import { SecretKeyRing } from './secret-key-ring.js';

export const SERVICE_KEY_BYTES = 32;

/** The keys a server signs and seals with. Every node of one deployment must hold the same ones. */
export interface ServiceKeys {
  /** Seals provider keys and dial-in secrets at rest: the key the store seals with at start-up. */
  secret: Buffer;
  /** The secret keys this node opens with and the one it seals with, following a rotation (SecretBox takes it). */
  secretRing: SecretKeyRing;
  /** Signs recording download links (UrlSigner). */
  linkSigning: Buffer;
  /** Signs room tokens (RoomTokens). */
  roomToken: Buffer;
}

export type ServiceKeyName = 'secret' | 'linkSigning' | 'roomToken';

/**
 * Where each key comes from, first match wins: its environment variable; on PostgreSQL, its row
 * in `service_keys` (created by the first node to start); on SQLite, its file in the data dir
 * (created on first start).
 */
export const SERVICE_KEY_SOURCES: Record<ServiceKeyName, { env: string; row: string; file: string; label: string }> = {
  secret: { env: 'SWITCHBOARD_SECRET_KEY', row: 'secret', file: 'secret.key', label: 'secret key' },
  linkSigning: {
    env: 'SWITCHBOARD_LINK_SIGNING_KEY',
    row: 'link-signing',
    file: 'link-signing.key',
    label: 'link-signing key',
  },
  roomToken: { env: 'SWITCHBOARD_ROOM_TOKEN_KEY', row: 'room-token', file: 'room-token.key', label: 'room-token key' },
};

export const SERVICE_KEY_NAMES = Object.keys(SERVICE_KEY_SOURCES) as ServiceKeyName[];

function decodeKey(base64: string, where: string): Buffer {
  const key = Buffer.from(base64.trim(), 'base64');
  if (key.length !== SERVICE_KEY_BYTES) throw new Error(`${where} is not a ${SERVICE_KEY_BYTES}-byte base64 key`);
  return key;
}

function newKeyBase64(): string {
  return randomBytes(SERVICE_KEY_BYTES).toString('base64');
}

/** One key, or (during a rotation of the secret key) several, separated by commas or new lines. */
function decodeKeys(text: string, where: string): Buffer[] {
  const parts = text.split(/[\s,]+/).filter((part) => part.length > 0);
  if (parts.length === 0) throw new Error(`${where} holds no key`);
  return parts.map((part) => decodeKey(part, where));
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

/**
 * Where one key of a deployment comes from (first match wins): its environment variable; on
 * PostgreSQL its `service_keys` row; on SQLite its file in the data dir.
 */
export type KeySource = { kind: 'env'; keys: Buffer[] } | { kind: 'row'; row: string } | { kind: 'file'; path: string };

export function keySourceOf(
  config: Pick<AppConfig, 'dataDir' | 'serviceKeys'>,
  engine: OpenedDatabase['engine'],
  name: ServiceKeyName,
): KeySource {
  const source = SERVICE_KEY_SOURCES[name];
  const fromEnv = config.serviceKeys[name];
  if (fromEnv) return { kind: 'env', keys: Array.isArray(fromEnv) ? fromEnv : [fromEnv] };
  if (engine === 'postgres') return { kind: 'row', row: source.row };
  return { kind: 'file', path: join(config.dataDir, source.file) };
}

/** The keys a source holds, the stored key created on first use when `create` (a server starting). */
export async function readSourceKeys(source: KeySource, repo: ServiceKeysRepo, create: boolean): Promise<Buffer[]> {
  switch (source.kind) {
    case 'env':
      return source.keys;
    case 'row': {
      const text = create ? await repo.getOrCreate(source.row, newKeyBase64()) : await repo.get(source.row);
      return text === undefined ? [] : decodeKeys(text, `service_keys.${source.row}`);
    }
    case 'file': {
      if (create) readOrCreateKeyFileKeys(source.path);
      return readKeyFileKeys(source.path) ?? [];
    }
  }
}

/** Replaces the keys a stored source holds (a rotation); keys set in the environment are the operator's to change. */
export async function writeSourceKeys(
  source: KeySource,
  repo: ServiceKeysRepo,
  keys: readonly Buffer[],
): Promise<void> {
  const encoded = keys.map((key) => key.toString('base64'));
  if (source.kind === 'row') await repo.set(source.row, encoded.join(','));
  else if (source.kind === 'file') replaceFile(source.path, `${encoded.join('\n')}\n`);
  else throw new Error('keys set in the environment are changed in the environment');
}

/** Rewrites a key file whole (0600): a reader sees the old content or the new, never half of it. */
function replaceFile(path: string, content: string): void {
  const temporary = `${path}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`;
  try {
    writeFileSync(temporary, content, { mode: 0o600, flag: 'wx' });
    renameSync(temporary, path);
  } finally {
    rmSync(temporary, { force: true });
  }
}

/** A key file's keys (one, or two during a rotation), or undefined when there is no such file. */
export function readKeyFileKeys(path: string): Buffer[] | undefined {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  return decodeKeys(text, path);
}

function readOrCreateKeyFileKeys(path: string): Buffer[] {
  const existing = readKeyFileKeys(path);
  if (existing) return existing;
  writeFileOnce(path, `${newKeyBase64()}\n`);
  return readKeyFileKeys(path)!;
}

/** Names a source in a message: the variable, the row or the file. */
function describeSource(source: KeySource, name: ServiceKeyName): string {
  const { env, row } = SERVICE_KEY_SOURCES[name];
  if (source.kind === 'env') return env;
  if (source.kind === 'row') return `the key in service_keys.${row} (${env} unset)`;
  return `${source.path} (${env} unset)`;
}

/** What to do about a key that does not match the store, by where the key came from. */
function mismatchAdvice(source: KeySource, name: ServiceKeyName): string {
  const { env, row, file } = SERVICE_KEY_SOURCES[name];
  if (source.kind === 'env')
    return `give this node the same ${env} as the nodes already using this store (or unset it to use the stored key); to change the store's key, run switchboard db rotate-key ${row}`;
  if (source.kind === 'row') return `restore service_keys.${row} from a backup, or set ${env} to the store's key`;
  return `restore the data dir's ${file} that goes with this store, or set ${env} to the store's key`;
}

/**
 * Checks a source's keys against the fingerprint the store recorded when it first used that key
 * (recording it now if this is the first use) and returns the matching key: the one the store
 * seals or signs with. A store that already holds sealed values but no fingerprint (written
 * before fingerprints were kept) must open one of them with the key. Anything else is a
 * KeyMismatchError, which stops start-up.
 */
export async function checkKeyAgainstStore(
  name: ServiceKeyName,
  source: KeySource,
  keys: readonly Buffer[],
  database: OpenedDatabase,
): Promise<Buffer> {
  const { row, env, label } = SERVICE_KEY_SOURCES[name];
  const fingerprints = new KeyFingerprintsRepo(database.db);
  let stored = await fingerprints.get(row);
  if (stored === undefined) {
    if (name === 'secret') {
      const sample = await new SealedValuesRepo(database.db).any();
      const opens = (key: Buffer) => {
        try {
          new SecretBox(key).open(sample!.sealed);
          return true;
        } catch {
          return false;
        }
      };
      const first = sample ? keys.find(opens) : keys[0];
      if (!first)
        throw new KeyMismatchError(
          env,
          `${describeSource(source, name)} does not open the values this store holds sealed (${sample!.kind} ${sample!.id}): ${mismatchAdvice(source, name)}`,
        );
      stored = await fingerprints.getOrCreate(row, keyFingerprint(first));
    } else stored = await fingerprints.getOrCreate(row, keyFingerprint(keys[0]!));
  }
  const match = keys.find((key) => keyFingerprint(key) === stored);
  if (match) return match;
  const given = keys.map((key) => shortFingerprint(keyFingerprint(key))).join(', ');
  throw new KeyMismatchError(
    env,
    `${describeSource(source, name)} is not the ${label} this store uses (fingerprint ${given} here, ${shortFingerprint(stored)} in the store): ${mismatchAdvice(source, name)}`,
  );
}

/**
 * The server's keys, from the environment, the PostgreSQL store or the data dir (see
 * SERVICE_KEY_SOURCES), each checked against the store's fingerprint of it: a node given other
 * keys than the store's stops here with a KeyMismatchError, before it listens.
 */
export async function loadServiceKeys(
  config: Pick<AppConfig, 'dataDir' | 'serviceKeys'>,
  database: OpenedDatabase,
): Promise<ServiceKeys> {
  const repo = new ServiceKeysRepo(database.db);
  const current = {} as Record<ServiceKeyName, Buffer>;
  const held = {} as Record<ServiceKeyName, Buffer[]>;
  for (const name of SERVICE_KEY_NAMES) {
    const source = keySourceOf(config, database.engine, name);
    held[name] = await readSourceKeys(source, repo, true);
    // Only the secret key may be two keys (during its rotation); the signing keys are one each.
    if (name !== 'secret' && held[name].length > 1) held[name] = [held[name][0]!];
    current[name] = await checkKeyAgainstStore(name, source, held[name], database);
  }
  const secretSource = keySourceOf(config, database.engine, 'secret');
  const fingerprints = new KeyFingerprintsRepo(database.db);
  const secretRing = new SecretKeyRing(held.secret, current.secret, async () => ({
    keys: await readSourceKeys(secretSource, repo, false),
    sealingFingerprint: await fingerprints.get(SERVICE_KEY_SOURCES.secret.row),
  }));
  return { secret: current.secret, secretRing, linkSigning: current.linkSigning, roomToken: current.roomToken };
}
