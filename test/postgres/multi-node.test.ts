/**
 * Several nodes on one PostgreSQL store: they start together safely, and what one writes or
 * signs, the others read and accept (provider keys, dial-in secrets, access links, room tokens).
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { sql } from 'kysely';
import pg from 'pg';
import { afterEach, describe, expect, inject, it } from 'vitest';
import WebSocket from 'ws';
import { encodePcm16Wav } from '../../src/audio/wav.js';
import { loadConfig } from '../../src/config/env.js';
import { KeyMismatchError } from '../../src/security/key-fingerprint.js';
import { CLOSE } from '../../src/shared/close-codes.js';
import { loadServiceKeys } from '../../src/security/service-keys.js';
import { AccountsRepo, DEFAULT_ACCOUNT_NAME } from '../../src/store/accounts-repo.js';
import { type OpenedDatabase, openDatabase } from '../../src/store/database.js';
import { MIGRATION_NAMES } from '../../src/store/migrations.js';
import { RecordingsRepo } from '../../src/store/recordings-repo.js';
import { freePort } from '../helpers/free-port.js';
import { type TestApp, createTestApp } from '../helpers/test-app.js';
import { auth, removeDir, sampleConfig, tempDataDir } from '../helpers/test-data.js';
import { createTestDatabase } from '../helpers/test-store.js';

const apps: TestApp[] = [];
const databases: OpenedDatabase[] = [];
const dirs: string[] = [];
afterEach(async () => {
  for (const app of apps.splice(0)) await app.close();
  for (const database of databases.splice(0)) await database.close();
  for (const dir of [...dirs.splice(0)]) removeDir(dir);
});

/** A node: its own data dir, the shared database. */
async function node(databaseUrl: string, env: Record<string, string> = {}): Promise<TestApp> {
  const dataDir = tempDataDir();
  dirs.push(dataDir);
  const app = await createTestApp({ DATABASE_URL: databaseUrl, ...env }, dataDir);
  apps.push(app);
  return app;
}

const KEY_ENV = ['SWITCHBOARD_SECRET_KEY', 'SWITCHBOARD_LINK_SIGNING_KEY', 'SWITCHBOARD_ROOM_TOKEN_KEY'];

describe('nodes starting together on an empty database', () => {
  it('apply each migration once and agree on one set of keys', async () => {
    const url = await createTestDatabase();
    const started = await Promise.all(
      Array.from({ length: 4 }, async () => {
        const dataDir = tempDataDir();
        dirs.push(dataDir);
        const database = await openDatabase(dataDir, url);
        databases.push(database);
        return loadServiceKeys(loadConfig({ SWITCHBOARD_DATA_DIR: dataDir, DATABASE_URL: url }), database);
      }),
    );
    for (const keys of started.slice(1)) {
      expect(keys.secret.equals(started[0]!.secret)).toBe(true);
      expect(keys.linkSigning.equals(started[0]!.linkSigning)).toBe(true);
      expect(keys.roomToken.equals(started[0]!.roomToken)).toBe(true);
    }
    const [db] = databases;
    const migrations = await sql<{ name: string }>`select name from kysely_migration order by name`.execute(db!.db);
    expect(migrations.rows.map((r) => r.name)).toEqual(MIGRATION_NAMES);
    const stored = await db!.db.selectFrom('service_keys').select('name').orderBy('name').execute();
    expect(stored.map((r) => r.name)).toEqual(['link-signing', 'room-token', 'secret']);
    // The data dirs hold no key files: on PostgreSQL the keys live in the store.
    for (const dir of dirs) expect(readdirSync(dir).filter((f) => f.endsWith('.key'))).toEqual([]);
  });
});

describe('two nodes on one database', () => {
  it('open on one what the other sealed: provider keys and dial-in secrets', async () => {
    const url = await createTestDatabase();
    const [a, b] = [await node(url), await node(url)];
    const created = await a.app.inject({
      method: 'POST',
      url: '/v1/bots/twilio-config',
      headers: auth(),
      payload: sampleConfig(),
    });
    expect(created.statusCode).toBe(200);
    const view = created.json() as { id: string; botConfig: { api_keys: Record<string, string> } };

    // Reading masks the keys, which means opening them first: a wrong key would be a 500.
    const read = await b.app.inject({ method: 'GET', url: `/v1/bots/twilio-config/${view.id}`, headers: auth() });
    expect(read.statusCode, read.body).toBe(200);
    expect(read.json()).toEqual(view);
    // Sent back masked through B, the keys A sealed are kept; A still opens them.
    const roundTrip = { ...sampleConfig(), api_keys: { ...view.botConfig.api_keys, cartesia: 'ct-new-key-1234567' } };
    const replaced = await b.app.inject({
      method: 'POST',
      url: `/v1/bots/twilio-config/${view.id}`,
      headers: auth(),
      payload: roundTrip,
    });
    expect(replaced.statusCode, replaced.body).toBe(200);
    const again = await a.app.inject({ method: 'GET', url: `/v1/bots/twilio-config/${view.id}`, headers: auth() });
    expect(again.json().botConfig.api_keys).toEqual({ openai: '****6789', deepgram: '****efgh', cartesia: '****4567' });

    // Dial-in entries carry webhook secrets, sealed the same way.
    expect(
      (
        await a.app.inject({
          method: 'POST',
          url: '/v1/buy-phone-number',
          headers: auth(),
          payload: { number: '+14155550142' },
        })
      ).statusCode,
    ).toBe(200);
    const hmac = Buffer.alloc(32, 9).toString('base64');
    const entry = { phone_number: '+14155550142', room_creation_api: `http://localhost:${await freePort()}/`, hmac };
    const set = await a.app.inject({
      method: 'POST',
      url: '/v1/',
      headers: auth(),
      payload: { properties: { pinless_dialin: [entry] } },
    });
    expect(set.statusCode, set.body).toBe(200);
    const domain = await b.app.inject({ method: 'GET', url: '/v1/', headers: auth() });
    expect(domain.statusCode, domain.body).toBe(200);
    expect(domain.json().config.pinless_dialin).toEqual([
      expect.objectContaining({ phone_number: '+14155550142', hmac }),
    ]);
  });

  it('accept on one the access links and room tokens the other signed', async () => {
    const url = await createTestDatabase();
    const [a, b] = [await node(url), await node(url)];

    // A finished recording whose file B has (a shared bucket, in a real deployment).
    const account = await new AccountsRepo(a.database.db).ensureAccount(DEFAULT_ACCOUNT_NAME);
    await new RecordingsRepo(a.database.db).insert({
      id: 'rec-shared',
      account_id: account.id,
      room_name: 'room',
      mtg_session_id: 'session',
      start_ts: 1_700_000_000,
      status: 'finished',
      max_participants: 2,
      duration_secs: 1,
      tracks_json: '[]',
      s3_key: `${account.id}/rec-shared/mixed.wav`,
      storage: 'local',
      bucket_json: null,
      created_at: new Date().toISOString(),
      finished_at: new Date().toISOString(),
    });
    const wav = encodePcm16Wav(new Int16Array(800).fill(321), 8000);
    mkdirSync(join(b.dataDir, 'recordings', account.id, 'rec-shared'), { recursive: true });
    writeFileSync(join(b.dataDir, 'recordings', account.id, 'rec-shared', 'mixed.wav'), wav);

    const link = await a.app.inject({ method: 'GET', url: '/v1/recordings/rec-shared/access-link', headers: auth() });
    expect(link.statusCode, link.body).toBe(200);
    const path = (link.json() as { download_link: string }).download_link.replace(a.config.publicUrl, '');
    const download = await b.app.inject({ method: 'GET', url: path });
    expect(download.statusCode, download.body).toBe(200);
    expect(download.rawPayload.equals(Buffer.from(wav))).toBe(true);

    // A room token from A, presented to B: B checks it (4401 if it did not verify), then finds
    // that the room is not one of its own.
    const started = await a.app.inject({
      method: 'POST',
      url: '/v1/bots/start',
      headers: auth(),
      payload: sampleConfig({ bot_profile: 'voice_2024_10', max_duration: 300 }),
    });
    expect(started.statusCode, started.body).toBe(200);
    const { room_url: roomUrl, token } = started.json() as { room_url: string; token: string };
    const name = roomUrl.split('/rooms/')[1]!;
    const bAddress = await b.app.listen({ port: 0, host: '127.0.0.1' });
    const socket = new WebSocket(
      `${bAddress.replace('http', 'ws')}/rooms/${name}/ws?token=${encodeURIComponent(token)}`,
    );
    const [code] = (await once(socket, 'close')) as [number];
    expect(code).toBe(CLOSE.notFound);
  });

  it('a node given other keys in the environment refuses to start rather than fail every read of what the others sealed', async () => {
    const url = await createTestDatabase();
    const a = await node(url);
    const created = await a.app.inject({
      method: 'POST',
      url: '/v1/bots/twilio-config',
      headers: auth(),
      payload: sampleConfig(),
    });
    expect(created.statusCode).toBe(200);
    const stranger = node(
      url,
      Object.fromEntries(KEY_ENV.map((name, i) => [name, Buffer.alloc(32, i + 1).toString('base64')])),
    );
    await expect(stranger).rejects.toThrow(KeyMismatchError);
    await expect(stranger).rejects.toThrow(/^SWITCHBOARD_SECRET_KEY is not the secret key this store uses/);
  });

  it('share keys given in the environment instead of storing them', async () => {
    const url = await createTestDatabase();
    const env = Object.fromEntries(KEY_ENV.map((name, i) => [name, Buffer.alloc(32, 40 + i).toString('base64')]));
    const [a, b] = [await node(url, env), await node(url, env)];
    expect(a.keys.linkSigning.equals(Buffer.alloc(32, 41))).toBe(true);
    const created = await a.app.inject({
      method: 'POST',
      url: '/v1/bots/twilio-config',
      headers: auth(),
      payload: sampleConfig(),
    });
    expect(
      (await b.app.inject({ method: 'GET', url: `/v1/bots/twilio-config/${created.json().id}`, headers: auth() }))
        .statusCode,
    ).toBe(200);
    expect(await a.database.db.selectFrom('service_keys').selectAll().execute()).toEqual([]);
  });

  it('survive the database dropping their connections, mid-query too: /healthz says 503, then 200 once it is back', async () => {
    const url = await createTestDatabase();
    const a = await node(url);
    expect((await a.app.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
    const name = new URL(url).pathname.slice(1);
    const admin = new pg.Client({ connectionString: inject('postgresAdminUrl') });
    await admin.connect();
    try {
      // A query in flight when its connection goes (a failover, a restart).
      // (Its outcome is taken at once: it fails while the test is still awaiting the termination.)
      const slow = sql`select pg_sleep(60)`.execute(a.database.db).then(
        () => 'finished',
        (err: unknown) => err,
      );
      const running = async () =>
        (await admin.query("select 1 from pg_stat_activity where datname = $1 and query like '%pg_sleep%'", [name]))
          .rowCount! > 0;
      while (!(await running())) await new Promise((resolve) => setTimeout(resolve, 20));
      await admin.query(`alter database ${name} allow_connections false`);
      await admin.query('select pg_terminate_backend(pid) from pg_stat_activity where datname = $1', [name]);
      expect(await slow).toMatchObject({ message: 'terminating connection due to administrator command' });
      const down = await a.app.inject({ method: 'GET', url: '/healthz' });
      expect(down.statusCode).toBe(503);
      expect(down.json().error).toBe('service-unavailable');

      await admin.query(`alter database ${name} allow_connections true`);
      // Connections the pool still held when the database went are discarded as they fail.
      let health = 0;
      while (health !== 200) {
        health = (await a.app.inject({ method: 'GET', url: '/healthz' })).statusCode;
        expect([200, 503]).toContain(health);
      }
      const listed = await a.app.inject({ method: 'GET', url: '/v1/bots/twilio-config', headers: auth() });
      expect(listed.statusCode).toBe(200);
    } finally {
      await admin.end();
    }
  });

  it('leave another node’s live recording alone when one starts; its own node recovers it', async () => {
    const url = await createTestDatabase();
    const aDataDir = tempDataDir();
    dirs.push(aDataDir);
    // Node A records a call: two seconds reach its data dir, the recording still in progress.
    const a = spawn(
      process.execPath,
      ['--import', 'tsx', fileURLToPath(new URL('../helpers/interrupted-recording.ts', import.meta.url)), aDataDir],
      {
        stdio: ['ignore', 'pipe', 'inherit'],
        env: { ...process.env, DATABASE_URL: url },
      },
    );
    const [line] = (await once(a.stdout!, 'data')) as [Buffer];
    const { id } = JSON.parse(line.toString()) as { id: string };

    // B starts (recovering what it left behind): A's live recording is not B's to finish.
    const b = await node(url);
    const repo = new RecordingsRepo(b.database.db);
    expect((await repo.getById(id))?.status).toBe('in-progress');

    // A dies; restarted on its data dir, it finalises the recording from its files.
    a.kill('SIGKILL');
    await once(a, 'exit');
    apps.push(await createTestApp({ DATABASE_URL: url }, aDataDir));
    expect(await repo.getById(id)).toMatchObject({ status: 'finished', duration_secs: 2 });
  });
});
