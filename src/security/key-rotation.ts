import { randomBytes } from 'node:crypto';
import type { AppConfig } from '../config/env.js';
import type { OpenedDatabase } from '../store/database.js';
import { KeyFingerprintsRepo } from '../store/key-fingerprints-repo.js';
import { SealedValuesRepo } from '../store/sealed-values-repo.js';
import { ServiceKeysRepo } from '../store/service-keys-repo.js';
import { keyFingerprint, shortFingerprint } from './key-fingerprint.js';
import { SecretBox } from './secret-box.js';
import { KEY_REFRESH_MS } from './secret-key-ring.js';
import {
  SERVICE_KEY_BYTES,
  SERVICE_KEY_SOURCES,
  type ServiceKeyName,
  checkKeyAgainstStore,
  keySourceOf,
  readSourceKeys,
  writeSourceKeys,
} from './service-keys.js';

/** A rotation that cannot go ahead as asked: an operator's mistake, told in one line. */
export class KeyRotationError extends Error {
  override name = 'KeyRotationError';
}

export interface RotationOptions {
  /** The new key; without it a stored key gets a random one (a key set in the environment names its own). */
  newKey?: Buffer;
  /** How long running nodes take to notice a change (their refresh interval, with a margin). */
  settleMs?: number;
  /** Progress, a line at a time. */
  say: (line: string) => void;
}

export interface RotationResult {
  /** Values sealed again with the new key, by kind. */
  resealed: { 'bot-config': number; 'bot-config-secrets': number; 'dialin-config': number };
  /** Values no key opened (sealed with a key already gone): named, left as they were. */
  unreadable: string[];
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Rotates one of the store's keys on purpose, with the nodes running.
 *
 * The secret key seals values at rest, so its rotation is in steps that keep every value readable
 * on every node throughout: (1) the new key joins the old one in every node's ring (written to
 * the store for a stored key; for a key set in the environment the operator has already set
 * `SWITCHBOARD_SECRET_KEY=<new>,<old>` on every node); (2) once the nodes have read it (they
 * refresh every KEY_REFRESH_MS), the store's fingerprint names the new key, so every node seals
 * with it; (3) every value still sealed with the old key is opened and sealed again with the new
 * one, each replaced only if no node rewrote it meanwhile; (4) the old key leaves the stored ring.
 *
 * The link-signing and room-token keys seal nothing: the new key replaces the old one in the store
 * (and its fingerprint), and the nodes take it up when restarted; links and room tokens signed
 * with the old key are then refused.
 */
export async function rotateKey(
  config: Pick<AppConfig, 'dataDir' | 'serviceKeys'>,
  database: OpenedDatabase,
  name: ServiceKeyName,
  options: RotationOptions,
): Promise<RotationResult> {
  const settleMs = options.settleMs ?? 2 * KEY_REFRESH_MS + 500;
  const { row, env, label } = SERVICE_KEY_SOURCES[name];
  const source = keySourceOf(config, database.engine, name);
  const repo = new ServiceKeysRepo(database.db);
  const held = await readSourceKeys(source, repo, false);
  if (held.length === 0)
    throw new KeyRotationError(`this store has no ${label} yet: start a server on it once, then rotate`);
  // The same check a starting node makes: this command must hold the store's current key.
  const current = await checkKeyAgainstStore(name, source, held, database);
  const fingerprints = new KeyFingerprintsRepo(database.db);
  const result: RotationResult = {
    resealed: { 'bot-config': 0, 'bot-config-secrets': 0, 'dialin-config': 0 },
    unreadable: [],
  };

  let next: Buffer;
  if (source.kind === 'env') {
    const others = held.filter((key) => !key.equals(current));
    if (options.newKey && !others.some((key) => key.equals(options.newKey!)))
      throw new KeyRotationError(
        `${env} is set: give every node (and this command) ${env}=<new key>,<old key> first, so that every node can open what the new key seals`,
      );
    if (others.length === 0)
      throw new KeyRotationError(
        name === 'secret'
          ? `${env} holds only the store's current key: set ${env}=<new key>,<current key> on every node and restart them, then run this again with the same ${env}`
          : `${env} is set: pass the new key with --new-key, then set ${env} to it on every node`,
      );
    next = options.newKey ?? others[0]!;
  } else {
    // A random key never leaves the store: nothing prints it.
    next = options.newKey ?? randomBytes(SERVICE_KEY_BYTES);
  }
  if (next.equals(current)) throw new KeyRotationError(`the new ${label} is the store's current one`);
  const nextFingerprint = keyFingerprint(next);

  if (name !== 'secret') {
    if (source.kind !== 'env') await writeSourceKeys(source, repo, [next]);
    await fingerprints.set(row, nextFingerprint);
    options.say(
      `the store's ${label} is now ${shortFingerprint(nextFingerprint)}: restart every node` +
        (source.kind === 'env' ? ` with ${env} set to the new key` : '') +
        `; ${name === 'linkSigning' ? 'recording links' : 'room tokens'} signed with the old key are no longer accepted`,
    );
    return result;
  }

  if (source.kind !== 'env') {
    await writeSourceKeys(source, repo, [current, next]);
    options.say(
      `added the new ${label} ${shortFingerprint(nextFingerprint)} beside the old one; waiting for the nodes to read it`,
    );
    await sleep(settleMs);
  }
  await fingerprints.set(row, nextFingerprint);
  options.say('the nodes now seal with the new key; waiting for every node to take it up');
  await sleep(settleMs);

  const box = new SecretBox(next);
  const opener = new SecretBox({ sealing: () => next, readable: () => [next, current, ...held] });
  const values = new SealedValuesRepo(database.db);
  for (const value of await values.all()) {
    if (box.isSealedWithCurrentKey(value.sealed)) continue;
    let plaintext: string;
    try {
      plaintext = opener.open(value.sealed);
    } catch {
      result.unreadable.push(`${value.kind} ${value.id}`);
      continue;
    }
    // Rewritten by a node meanwhile: that node sealed it with the new key already.
    if (await values.replace(value, box.seal(plaintext))) result.resealed[value.kind] += 1;
  }

  if (source.kind !== 'env') await writeSourceKeys(source, repo, [next]);
  options.say(
    `re-sealed ${result.resealed['bot-config']} configuration(s), ${result.resealed['bot-config-secrets']} configuration signing secret(s) and ${result.resealed['dialin-config']} dial-in configuration(s) with the new key` +
      (result.unreadable.length > 0
        ? `; ${result.unreadable.length} could not be opened with either key and were left as they were: ${result.unreadable.join(', ')}`
        : '') +
      (source.kind === 'env'
        ? `; now set ${env} to the new key alone on every node (the old one opens nothing any more)`
        : '; the old key is gone from the store'),
  );
  return result;
}
