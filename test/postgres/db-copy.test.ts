/**
 * `switchboard db copy`: a SQLite store moved into PostgreSQL serves the same API, with the same
 * ids, list order, sealed provider keys and signing keys.
 */
import { cpSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { encodePcm16Wav } from '../../src/audio/wav.js';
import { AccountsRepo, DEFAULT_ACCOUNT_NAME } from '../../src/store/accounts-repo.js';
import { COPIED_TABLES } from '../../src/store/copy-store.js';
import { RecordingsRepo } from '../../src/store/recordings-repo.js';
import { CallRecordsRepo } from '../../src/store/call-records-repo.js';
import { freePort } from '../helpers/free-port.js';
import { runCli } from '../helpers/cli-process.js';
import { type TestApp, createTestApp } from '../helpers/test-app.js';
import { auth, removeDir, sampleConfig, tempDataDir } from '../helpers/test-data.js';
import { createTestDatabase } from '../helpers/test-store.js';

const apps: TestApp[] = [];
const dirs: string[] = [];
afterEach(async () => {
  for (const app of apps.splice(0)) await app.close();
  for (const dir of dirs.splice(0)) removeDir(dir);
});

async function app(env: Record<string, string>, store: 'sqlite' | 'postgres'): Promise<TestApp> {
  const dataDir = tempDataDir();
  dirs.push(dataDir);
  const t = await createTestApp(env, dataDir, store);
  apps.push(t);
  return t;
}

async function json(t: TestApp, url: string, key?: string): Promise<unknown> {
  const res = await t.app.inject({ method: 'GET', url, headers: auth(key) });
  expect(res.statusCode, `${url}: ${res.body}`).toBe(200);
  return res.json();
}

/** A SQLite store with a row in every table, through the API where there is one. */
async function populatedSqliteStore(): Promise<{ t: TestApp; otherKey: string }> {
  const t = await app({}, 'sqlite');
  for (let i = 0; i < 4; i++) {
    const res = await t.app.inject({
      method: 'POST',
      url: '/v1/bots/twilio-config',
      headers: auth(),
      payload: sampleConfig({ max_duration: 60 + i }),
    });
    expect(res.statusCode).toBe(200);
  }
  // A gap in seq: the copy keeps seq as it is, not renumbered.
  const [, second] = (await json(t, '/v1/bots/twilio-config')) as Array<{ id: string }>;
  expect(
    (await t.app.inject({ method: 'DELETE', url: `/v1/bots/twilio-config/${second!.id}`, headers: auth() })).statusCode,
  ).toBe(200);
  const otherKey = await t.createKey('acme');
  expect(
    (
      await t.app.inject({
        method: 'POST',
        url: '/v1/bots/twilio-config',
        headers: auth(otherKey),
        payload: sampleConfig(),
      })
    ).statusCode,
  ).toBe(200);
  for (const number of ['+14155550150', '+14155550151']) {
    expect(
      (
        await t.app.inject({
          method: 'POST',
          url: '/v1/buy-phone-number',
          headers: auth(),
          payload: { number, name: 'front' },
        })
      ).statusCode,
    ).toBe(200);
  }
  const entry = {
    phone_number: '+14155550150',
    room_creation_api: `http://localhost:${await freePort()}/`,
    hmac: Buffer.alloc(32, 3).toString('base64'),
  };
  expect(
    (
      await t.app.inject({
        method: 'POST',
        url: '/v1/',
        headers: auth(),
        payload: { properties: { pinless_dialin: [entry] } },
      })
    ).statusCode,
  ).toBe(200);
  const account = await new AccountsRepo(t.database.db).ensureAccount(DEFAULT_ACCOUNT_NAME);
  for (const id of ['rec-a', 'rec-b']) {
    await new RecordingsRepo(t.database.db).insert({
      id,
      account_id: account.id,
      room_name: 'room',
      mtg_session_id: `session-${id}`,
      start_ts: 4_102_444_800, // 2100: past 32-bit seconds
      status: 'finished',
      max_participants: 2,
      duration_secs: 1,
      tracks_json: '[]',
      s3_key: `${account.id}/${id}/mixed.wav`,
      storage: 'local',
      bucket_json: null,
      created_at: new Date().toISOString(),
      finished_at: new Date().toISOString(),
    });
    mkdirSync(join(t.dataDir, 'recordings', account.id, id), { recursive: true });
    writeFileSync(
      join(t.dataDir, 'recordings', account.id, id, 'mixed.wav'),
      encodePcm16Wav(new Int16Array(800).fill(77), 8000),
    );
  }
  await new CallRecordsRepo(t.database.db).insert({
    id: 'call-a',
    account_id: account.id,
    kind: 'phone',
    bot_config_id: null,
    profile: 'telephony_ws_voice_2024_09',
    from_number: '+15550100001',
    to_number: null,
    call_sid: 'CA1',
    room_name: null,
    recording_id: 'rec-a',
    node_id: 'node-a',
    status: 'ended',
    started_at: new Date().toISOString(),
    ended_at: new Date().toISOString(),
    duration_ms: 1000,
    outcome: 'caller_hung_up',
    end_reason: 'stop',
    summary_json: null,
    turns_json: '[]',
    transcript_json: JSON.stringify([{ speaker: 'caller', text: 'hello', start_ms: 0, end_ms: 500 }]),
  });
  return { t, otherKey };
}

describe('switchboard db copy', () => {
  it('copies every table into PostgreSQL, which then serves the same API, links and keys', async () => {
    const { t: source, otherKey } = await populatedSqliteStore();
    const before = {
      configs: await json(source, '/v1/bots/twilio-config'),
      acme: await json(source, '/v1/bots/twilio-config', otherKey),
      numbers: await json(source, '/v1/purchased-phone-numbers'),
      domain: await json(source, '/v1/'),
      recordings: await json(source, '/v1/recordings'),
      calls: await json(source, '/v1/calls'),
      transcript: await json(source, '/v1/calls/call-a/transcript'),
    };
    const link = (
      (await json(source, '/v1/recordings/rec-a/access-link')) as { download_link: string }
    ).download_link.replace(source.config.publicUrl, '');
    const sourceCounts = Object.fromEntries(
      await Promise.all(
        COPIED_TABLES.map(
          async ({ table }) =>
            [table, (await source.database.db.selectFrom(table).selectAll().execute()).length] as const,
        ),
      ),
    );
    // Every table has rows but service_keys, which SQLite leaves empty (its keys are files).
    expect(
      Object.entries(sourceCounts)
        .filter(([, n]) => n === 0)
        .map(([table]) => table),
    ).toEqual(['service_keys']);
    const { dataDir } = source;
    apps.splice(apps.indexOf(source), 1);
    await source.close();

    const url = await createTestDatabase();
    const copied = await runCli(['db', 'copy', '--from', dataDir, '--to', url], {});
    expect(copied.code, copied.stderr).toBe(0);
    expect(copied.stderr).toBe('');
    expect(copied.stdout).toMatch(/bot_configs\s+4\n/);
    expect(copied.stdout).toMatch(/recordings\s+2\n/);
    expect(copied.stdout).toContain('key files       secret.key, link-signing.key, room-token.key');

    // A node with a data dir of its own: everything it knows comes from the database.
    const target = await app({ DATABASE_URL: url }, 'postgres');
    for (const { table } of COPIED_TABLES) {
      const rows = await target.database.db.selectFrom(table).selectAll().execute();
      expect(rows.length, table).toBe(table === 'service_keys' ? 3 : sourceCounts[table]);
    }
    expect(await json(target, '/v1/bots/twilio-config')).toEqual(before.configs);
    expect(await json(target, '/v1/bots/twilio-config', otherKey)).toEqual(before.acme);
    expect(await json(target, '/v1/purchased-phone-numbers')).toEqual(before.numbers);
    expect(await json(target, '/v1/')).toEqual(before.domain);
    expect(await json(target, '/v1/recordings')).toEqual(before.recordings);
    expect(await json(target, '/v1/calls')).toEqual(before.calls);
    expect(await json(target, '/v1/calls/call-a/transcript')).toEqual(before.transcript);
    for (const key of ['secret', 'linkSigning', 'roomToken'] as const) {
      const file = { secret: 'secret.key', linkSigning: 'link-signing.key', roomToken: 'room-token.key' }[key];
      expect(target.keys[key].toString('base64'), key).toBe(readFileSync(join(dataDir, file), 'utf8').trim());
    }
    // A link handed out before the move still works (the file travels with the data dir).
    cpSync(join(dataDir, 'recordings'), join(target.dataDir, 'recordings'), { recursive: true });
    expect((await target.app.inject({ method: 'GET', url: link })).statusCode).toBe(200);

    // New rows come after the copied ones.
    const created = await target.app.inject({
      method: 'POST',
      url: '/v1/bots/twilio-config',
      headers: auth(),
      payload: sampleConfig(),
    });
    expect(created.statusCode).toBe(200);
    const after = (await json(target, '/v1/bots/twilio-config')) as Array<{ id: string }>;
    expect(after).toHaveLength((before.configs as unknown[]).length + 1);
    expect(after.map((c) => c.id)).toEqual([
      created.json().id,
      ...(before.configs as Array<{ id: string }>).map((c) => c.id),
    ]);

    // The target is not empty now: refused, and nothing changes; --replace starts it afresh.
    const again = await runCli(['db', 'copy', '--from', dataDir, '--to', url], {});
    expect(again.code).toBe(1);
    expect(again.stderr).toContain('the target is not empty (accounts: 2, api_keys: 1, bot_configs: 5');
    expect(again.stderr).toContain('pass --replace');
    expect(again.stderr).not.toMatch(/\n\s+at /);
    expect(await json(target, '/v1/bots/twilio-config')).toEqual(after);
    const replaced = await runCli(
      ['db', 'copy', '--from', join(dataDir, 'switchboard.sqlite'), '--to', url, '--replace'],
      {},
    );
    expect(replaced.code, replaced.stderr).toBe(0);
    expect(await json(target, '/v1/bots/twilio-config')).toEqual(before.configs);
  });

  it('warns when the data dir has no secret.key for the sealed keys it copies', async () => {
    const source = await app({}, 'sqlite');
    expect(
      (
        await source.app.inject({
          method: 'POST',
          url: '/v1/bots/twilio-config',
          headers: auth(),
          payload: sampleConfig(),
        })
      ).statusCode,
    ).toBe(200);
    const { dataDir } = source;
    apps.splice(apps.indexOf(source), 1);
    await source.close();
    removeDir(join(dataDir, 'secret.key'));
    const url = await createTestDatabase();
    const copied = await runCli(['db', 'copy', '--from', dataDir, '--to', url], {});
    expect(copied.code).toBe(0);
    expect(copied.stdout).toContain('key files       link-signing.key, room-token.key');
    expect(copied.stderr).toContain('has no secret.key');
    expect(copied.stderr).toContain('SWITCHBOARD_SECRET_KEY');
  });
});
