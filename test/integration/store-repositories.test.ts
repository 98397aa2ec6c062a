/**
 * The repositories' contracts where SQL dialects differ (conflicts, affected-row counts, integer
 * types, upserts, case, cursor order). Runs on SQLite and, in the postgres project, on PostgreSQL.
 */
import { randomBytes } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { sealConfigSecrets, storedBodyOf } from '../../src/bots/config-secrets.js';
import { SecretBox } from '../../src/security/secret-box.js';
import { AccountsRepo } from '../../src/store/accounts-repo.js';
import { BotConfigsRepo } from '../../src/store/bot-configs-repo.js';
import { type OpenedDatabase, openDatabase } from '../../src/store/database.js';
import { DialinConfigsRepo } from '../../src/store/dialin-configs-repo.js';
import { PhoneNumbersRepo } from '../../src/store/phone-numbers-repo.js';
import { RecordingsRepo } from '../../src/store/recordings-repo.js';
import { ServiceKeysRepo } from '../../src/store/service-keys-repo.js';
import { removeDir, tempDataDir } from '../helpers/test-data.js';
import { TEST_STORE, testStoreEnv } from '../helpers/test-store.js';

let dataDir: string;
let database: OpenedDatabase;
beforeEach(async () => {
  dataDir = tempDataDir();
  database = await openDatabase(dataDir, (await testStoreEnv(dataDir)).DATABASE_URL);
  expect(database.engine).toBe(TEST_STORE);
});
afterEach(async () => {
  await database.close();
  removeDir(dataDir);
});

function number(accountId: string, n: number, name: string | null = null) {
  return {
    id: `pn-${n}`,
    account_id: accountId,
    number: `+1415555${String(n).padStart(4, '0')}`,
    name,
    region: 'CA',
    city: 'San Francisco',
    carrier: 'sandbox',
    carrier_ref: `ref-${n}`,
    created_at: new Date().toISOString(),
  };
}

describe(`repositories on ${TEST_STORE}`, () => {
  it('accounts: concurrent ensureAccount makes one account; keys revoke once and count as numbers', async () => {
    const accounts = new AccountsRepo(database.db);
    const made = await Promise.all(Array.from({ length: 5 }, () => accounts.ensureAccount('acme')));
    expect(new Set(made.map((a) => a.id)).size).toBe(1);
    expect(await accounts.domainOf(made[0]!.id)).toBe(made[0]!.domainId);

    const { record } = await accounts.createKey('acme', 'ci');
    await accounts.createKey('acme');
    expect(await accounts.countActiveKeys()).toBe(2);
    expect(await accounts.revokeKey(record.id)).toBe(true);
    expect(await accounts.revokeKey(record.id)).toBe(false);
    expect(await accounts.revokeKey('no-such-key')).toBe(false);
    expect(await accounts.countActiveKeys()).toBe(1);
    // Keys made in the same millisecond may list in either order.
    expect((await accounts.listKeys()).map((k) => [k.name, k.revokedAt === null])).toEqual(
      expect.arrayContaining([
        ['ci', false],
        [null, true],
      ]),
    );
  });

  it('bot configurations: insertion order with numeric seq, both cursor directions, misses report false', async () => {
    const accountId = (await new AccountsRepo(database.db).ensureAccount('default')).id;
    const repo = new BotConfigsRepo(database.db);
    const rows = [];
    for (let i = 0; i < 5; i++)
      rows.push(
        await repo.insert({
          id: `cfg-${i}`,
          accountId,
          bodyJson: `{"n":${i}}`,
          apiKeysSealed: i % 2 ? null : 'v1:sealed',
          secretsSealed: null,
        }),
      );
    expect(rows.map((r) => typeof r.seq)).toEqual(Array(5).fill('number'));
    expect(rows.map((r) => r.apiKeysSealed)).toEqual(['v1:sealed', null, 'v1:sealed', null, 'v1:sealed']);
    const seq2 = (await repo.seqOf(accountId, 'cfg-2'))!;
    expect((await repo.list(accountId, { kind: 'first' }, 2)).map((r) => r.id)).toEqual(['cfg-4', 'cfg-3']);
    expect((await repo.list(accountId, { kind: 'older', seq: seq2 }, 10)).map((r) => r.id)).toEqual(['cfg-1', 'cfg-0']);
    expect((await repo.list(accountId, { kind: 'newer', seq: seq2 }, 1)).map((r) => r.id)).toEqual(['cfg-3']);
    const none = { bodyJson: '{}', apiKeysSealed: null, secretsSealed: null };
    expect(await repo.replace(accountId, 'missing', none)).toBeUndefined();
    const replaced = await repo.replace(accountId, 'cfg-1', {
      bodyJson: '{"n":"one"}',
      apiKeysSealed: 'v1:x',
      secretsSealed: 'v1:y',
    });
    expect(replaced).toMatchObject({ bodyJson: '{"n":"one"}', apiKeysSealed: 'v1:x', secretsSealed: 'v1:y' });
    expect(await repo.delete(accountId, 'cfg-1')).toBe(true);
    expect(await repo.delete(accountId, 'cfg-1')).toBe(false);
    expect(await repo.delete('another-account', 'cfg-2')).toBe(false);
  });

  it('configuration secrets: rows written before 0010 are sealed once, their bodies without them; a row rewritten meanwhile is left alone', async () => {
    const accountId = (await new AccountsRepo(database.db).ensureAccount('default')).id;
    const repo = new BotConfigsRepo(database.db);
    const box = new SecretBox(randomBytes(32));
    const HMAC = Buffer.from('status-callback-secret-0123').toString('base64');
    const legacy = (id: string, body: Record<string, unknown>) =>
      repo.insert({ id, accountId, bodyJson: JSON.stringify(body), apiKeysSealed: null, secretsSealed: null });
    const callbackOnly = await legacy('cfg-callback', {
      max_duration: 60,
      status_callback: { url: 'https://hooks.example.com/calls', hmac: HMAC },
    });
    await legacy('cfg-both', {
      webhook_tools: { book: { url: 'https://hooks.example.com/book' } },
      webhook_secret_sealed: box.seal('whsec_the-webhook-secret'),
      status_callback: { url: 'https://hooks.example.com/calls', hmac: HMAC },
    });
    await legacy('cfg-plain', { max_duration: 30 });
    const raced = await legacy('cfg-raced', { status_callback: { url: 'https://a.example.com/', hmac: HMAC } });
    expect((await repo.withSecretsInBody()).map((r) => r.id)).toEqual(['cfg-callback', 'cfg-both', 'cfg-raced']);
    // Another node replaced this one first: the copy read here no longer matches, so it is not written.
    await repo.replace(accountId, 'cfg-raced', {
      bodyJson: '{"max_duration":9}',
      apiKeysSealed: null,
      secretsSealed: null,
    });
    expect(await repo.moveSecrets(raced, '{}', box.seal('{}'))).toBe(false);

    expect(await sealConfigSecrets(repo, box)).toEqual({ sealed: 2, unreadable: [] });
    for (const id of ['cfg-callback', 'cfg-both']) {
      const row = (await repo.get(accountId, id))!;
      expect(row.bodyJson).not.toContain(HMAC);
      expect(row.bodyJson).not.toContain('webhook_secret');
      expect(row.secretsSealed).toMatch(/^v1:/);
    }
    const both = (await repo.get(accountId, 'cfg-both'))!;
    expect(JSON.parse(box.open(both.secretsSealed!))).toEqual({
      webhook_secret: 'whsec_the-webhook-secret',
      status_callback_hmac: HMAC,
    });
    expect(storedBodyOf(box, both)).toMatchObject({
      webhook_secret: 'whsec_the-webhook-secret',
      status_callback: { url: 'https://hooks.example.com/calls', hmac: HMAC },
    });
    expect(storedBodyOf(box, (await repo.get(accountId, 'cfg-callback'))!)).toEqual({
      max_duration: 60,
      status_callback: { url: 'https://hooks.example.com/calls', hmac: HMAC },
    });
    expect((await repo.get(accountId, 'cfg-plain'))!.secretsSealed).toBeNull();
    // A second start finds nothing left to seal.
    expect(await repo.withSecretsInBody()).toEqual([]);
    expect(await sealConfigSecrets(repo, box)).toEqual({ sealed: 0, unreadable: [] });
    expect(callbackOnly.secretsSealed).toBeNull();
  });

  it('phone numbers: a held number is refused by the constraint, filters are exact and case-sensitive', async () => {
    const accounts = new AccountsRepo(database.db);
    const [a, b] = [(await accounts.ensureAccount('a')).id, (await accounts.ensureAccount('b')).id];
    const repo = new PhoneNumbersRepo(database.db);
    expect(await repo.insert(number(a, 1, 'front'))).toBe(true);
    expect(await repo.insert({ ...number(b, 1), id: 'pn-other' })).toBe(false);
    expect((await repo.findByNumber('+14155550001'))?.account_id).toBe(a);
    expect(await repo.insert(number(a, 2, 'Front'))).toBe(true);
    expect(await repo.count(a, {})).toBe(2);
    expect(await repo.count(a, { name: 'front' })).toBe(1);
    expect(await repo.count(a, { name: 'FRONT' })).toBe(0);
    expect((await repo.list(a, { kind: 'first' }, 10, { number: '+14155550002' })).map((r) => r.id)).toEqual(['pn-2']);
    expect(await repo.heldNumbers()).toEqual(new Set(['+14155550001', '+14155550002']));
  });

  it('dial-in entries: put replaces (an upsert), one row per account', async () => {
    const accountId = (await new AccountsRepo(database.db).ensureAccount('default')).id;
    const repo = new DialinConfigsRepo(database.db);
    await repo.put(accountId, 'v1:first');
    await repo.put(accountId, 'v1:second');
    expect(await repo.get(accountId)).toBe('v1:second');
    expect(await repo.all()).toEqual([{ accountId, entriesSealed: 'v1:second' }]);
  });

  it('recordings: Unix seconds past 2038 come back as numbers; in-progress ones by node, oldest first', async () => {
    const accountId = (await new AccountsRepo(database.db).ensureAccount('default')).id;
    const repo = new RecordingsRepo(database.db);
    const base = {
      account_id: accountId,
      room_name: 'room',
      max_participants: 2,
      duration_secs: null,
      tracks_json: null,
      s3_key: 'k',
      storage: 'local',
      bucket_json: null,
      created_at: new Date().toISOString(),
      finished_at: null,
    };
    await repo.insert({
      ...base,
      id: 'r1',
      mtg_session_id: 's1',
      start_ts: 4_102_444_800,
      status: 'in-progress',
      node_id: 'node-a',
    });
    await repo.insert({ ...base, id: 'r2', mtg_session_id: 's2', start_ts: 1_700_000_000, status: 'in-progress' });
    await repo.insert({
      ...base,
      id: 'r3',
      mtg_session_id: 's3',
      start_ts: 1_700_000_000,
      status: 'in-progress',
      node_id: 'node-b',
    });
    expect((await repo.getById('r1'))?.start_ts).toBe(4_102_444_800);
    // A node recovers its own and those of no node in particular, never another node's.
    expect((await repo.listInProgress('node-a')).map((r) => r.id)).toEqual(['r1', 'r2']);
    expect((await repo.listInProgress('node-b')).map((r) => r.id)).toEqual(['r2', 'r3']);
    await repo.update('r1', { status: 'finished', duration_secs: 12 });
    expect(await repo.get(accountId, 'r1')).toMatchObject({ status: 'finished', duration_secs: 12 });
    expect(await repo.count(accountId, { roomName: 'room' })).toBe(3);
  });

  it('service keys: the first stored key wins', async () => {
    const repo = new ServiceKeysRepo(database.db);
    const results = await Promise.all(['a', 'b', 'c'].map((candidate) => repo.getOrCreate('secret', candidate)));
    expect(new Set(results).size).toBe(1);
    expect(await repo.get('secret')).toBe(results[0]);
    expect(await repo.get('missing')).toBeUndefined();
  });
});
