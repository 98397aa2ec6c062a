import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { decodeMulaw, encodeMulaw } from '../../src/audio/mulaw.js';
import { encodePcm16Wav, parseWav } from '../../src/audio/wav.js';
import { UrlSigner } from '../../src/security/url-signer.js';
import { AccountsRepo, DEFAULT_ACCOUNT_NAME } from '../../src/store/accounts-repo.js';
import { RecordingsRepo } from '../../src/store/recordings-repo.js';
import { type TestApp, createTestApp } from '../helpers/test-app.js';
import { auth, removeDir, tempDataDir } from '../helpers/test-data.js';
import { testStoreEnv } from '../helpers/test-store.js';

let testApp: TestApp | undefined;
const dirs: string[] = [];

afterEach(async () => {
  await testApp?.close();
  testApp = undefined;
  for (const dir of dirs.splice(0)) removeDir(dir);
});

async function start(dataDir = tempDataDir()): Promise<TestApp> {
  dirs.push(dataDir);
  testApp = await createTestApp({}, dataDir);
  return testApp;
}

/** Rows straight into the store, oldest first: `rec-00` is the oldest. */
async function insertRecordings(
  app: TestApp,
  count: number,
  accountName = DEFAULT_ACCOUNT_NAME,
  prefix = 'rec',
): Promise<string[]> {
  const account = await new AccountsRepo(app.database.db).ensureAccount(accountName);
  const repo = new RecordingsRepo(app.database.db);
  const ids: string[] = [];
  for (let i = 0; i < count; i++) {
    const id = `${prefix}-${String(i).padStart(2, '0')}`;
    await repo.insert({
      id,
      account_id: account.id,
      room_name: i % 2 === 0 ? 'even-room' : 'odd-room',
      mtg_session_id: `session-${i}`,
      start_ts: 1_700_000_000 + i,
      status: 'finished',
      max_participants: 2,
      duration_secs: i,
      tracks_json: '[]',
      s3_key: `${account.id}/${id}/mixed.wav`,
      storage: 'local',
      bucket_json: null,
      created_at: new Date().toISOString(),
      finished_at: new Date().toISOString(),
    });
    ids.push(id);
  }
  return ids;
}

async function list(app: TestApp, query: string, key?: string) {
  const res = await app.app.inject({ method: 'GET', url: `/v1/recordings${query}`, headers: auth(key) });
  return {
    status: res.statusCode,
    body: res.json() as { total_count: number; data: Array<{ id: string }>; error?: string; info?: string },
  };
}

describe('GET /v1/recordings paging', () => {
  it('pages newest first forwards with starting_after and backwards with ending_before', async () => {
    const app = await start();
    const ids = await insertRecordings(app, 25);
    const newestFirst = [...ids].reverse();

    const first = await list(app, '?limit=10');
    expect(first.status).toBe(200);
    expect(first.body.total_count).toBe(25);
    expect(first.body.data.map((r) => r.id)).toEqual(newestFirst.slice(0, 10));

    const second = await list(app, `?limit=10&starting_after=${first.body.data.at(-1)!.id}`);
    expect(second.body.data.map((r) => r.id)).toEqual(newestFirst.slice(10, 20));
    const last = await list(app, `?limit=10&starting_after=${second.body.data.at(-1)!.id}`);
    expect(last.body.data.map((r) => r.id)).toEqual(newestFirst.slice(20));
    // Past the last page: empty, not an error.
    const beyond = await list(app, `?limit=10&starting_after=${ids[0]}`);
    expect(beyond.body).toEqual({ total_count: 25, data: [] });

    // Backwards from the last page gives the second again, and from the second the first.
    const back = await list(app, `?limit=10&ending_before=${last.body.data[0]!.id}`);
    expect(back.body.data.map((r) => r.id)).toEqual(newestFirst.slice(10, 20));
    const backToFirst = await list(app, `?limit=10&ending_before=${back.body.data[0]!.id}`);
    expect(backToFirst.body.data.map((r) => r.id)).toEqual(newestFirst.slice(0, 10));
    // A short page backwards keeps the items nearest the cursor.
    const nearest = await list(app, `?limit=3&ending_before=${newestFirst[5]}`);
    expect(nearest.body.data.map((r) => r.id)).toEqual(newestFirst.slice(2, 5));
    const beforeNewest = await list(app, `?ending_before=${newestFirst[0]}`);
    expect(beforeNewest.body.data).toEqual([]);

    // Default limit (100) returns all; filtering by room_name narrows the count too.
    expect((await list(app, '')).body.data).toHaveLength(25);
    const even = await list(app, '?room_name=even-room&limit=5');
    expect(even.body.total_count).toBe(13);
    expect(even.body.data.map((r) => r.id)).toEqual(['rec-24', 'rec-22', 'rec-20', 'rec-18', 'rec-16']);
  });

  it('answers bad paging input with a clear 400', async () => {
    const app = await start();
    await insertRecordings(app, 3);
    for (const [query, mention] of [
      ['?limit=0', 'limit'],
      ['?limit=101', 'limit'],
      ['?limit=ten', 'limit'],
      ['?limit=2.5', 'limit'],
      ['?starting_after=rec-01&ending_before=rec-02', 'not both'],
      ['?starting_after=no-such-recording', 'starting_after: no recording with id no-such-recording'],
      ['?ending_before=no-such-recording', 'ending_before: no recording with id no-such-recording'],
    ] as const) {
      const res = await list(app, query);
      expect(res.status, query).toBe(400);
      expect(res.body.error).toBe('invalid-request-error');
      expect(res.body.info, query).toContain(mention);
    }
    expect((await list(app, '?limit=1')).body.data).toHaveLength(1);
    expect((await list(app, '?limit=100')).body.data).toHaveLength(3);
  });
});

describe('recordings belong to one account', () => {
  it("hides another account's recordings: listing, get, link and delete all answer as if they did not exist", async () => {
    const app = await start();
    const [mine] = await insertRecordings(app, 1);
    const [theirs] = await insertRecordings(app, 2, 'other-account', 'other');
    const otherKey = await app.createKey('other-account');

    expect((await list(app, '')).body.data.map((r) => r.id)).toEqual([mine]);
    expect((await list(app, '', otherKey)).body.total_count).toBe(2);
    // Their id is not a valid cursor for me.
    expect((await list(app, `?starting_after=${theirs}`)).status).toBe(400);
    for (const [method, url] of [
      ['GET', `/v1/recordings/${theirs}`],
      ['GET', `/v1/recordings/${theirs}/access-link`],
      ['DELETE', `/v1/recordings/${theirs}`],
    ] as const) {
      const res = await app.app.inject({ method, url, headers: auth() });
      expect(res.statusCode, `${method} ${url}`).toBe(404);
      expect(res.json()).toEqual({ error: 'not-found', info: `no recording with id ${theirs}` });
    }
    expect(
      (await app.app.inject({ method: 'GET', url: `/v1/recordings/${theirs}`, headers: auth(otherKey) })).statusCode,
    ).toBe(200);
    // Without a key at all: the hosted service's "missing header" error.
    const anonymous = await app.app.inject({ method: 'GET', url: '/v1/recordings' });
    expect([anonymous.statusCode, anonymous.json().error]).toEqual([400, 'authorization-header-error']);
  });
});

describe('an interrupted recording', () => {
  it('is finalised at the next start: playable, the right duration, finished, downloadable, deletable', async () => {
    const dataDir = tempDataDir();
    dirs.push(dataDir);
    // A process records two seconds, then dies without finishing (SIGKILL).
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', fileURLToPath(new URL('../helpers/interrupted-recording.ts', import.meta.url)), dataDir],
      {
        stdio: ['ignore', 'pipe', 'pipe'],
        env: { ...process.env, ...(await testStoreEnv(dataDir)) },
      },
    );
    let stderr = '';
    child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const [line] = (await once(child.stdout!, 'data')) as [Buffer];
    const { id, writtenMs } = JSON.parse(line.toString()) as { id: string; writtenMs: number };
    child.kill('SIGKILL');
    await once(child, 'exit');
    expect(stderr).toBe('');

    // What the dead process left: data on disk, a header still saying "unknown size".
    const files = readdirRecording(dataDir, id);
    const left = readFileSync(files.mixed);
    expect(left.length).toBe(44 + writtenMs * 8 * 2);
    expect(left.readUInt32LE(40)).toBe(0xffffffff);

    const app = await start(dataDir);
    const got = await app.app.inject({ method: 'GET', url: `/v1/recordings/${id}`, headers: auth() });
    expect(got.statusCode).toBe(200);
    const recording = got.json() as {
      status: string;
      duration: number;
      room_name: string;
      tracks: Array<{ name: string; duration_ms: number }>;
    };
    expect(recording).toMatchObject({ status: 'finished', duration: 2, room_name: 'crash-room' });
    expect(recording.tracks.map((t) => [t.name, t.duration_ms])).toEqual([
      ['caller', writtenMs],
      ['bot', writtenMs],
    ]);

    for (const track of ['caller', 'bot', 'mixed'] as const) {
      const bytes = readFileSync(files[track]);
      expect(bytes.readUInt32LE(40), track).toBe(bytes.length - 44);
      expect(bytes.readUInt32LE(4), track).toBe(bytes.length - 8);
      expect(parseWav(bytes).samples.length).toBe(writtenMs * 8);
    }
    // The audio is what was recorded: the caller's ramp frame by frame, the bot from 1 s on.
    const caller = parseWav(readFileSync(files.caller)).samples;
    const expectedLevel = (frame: number) => decodeMulaw(encodeMulaw(new Int16Array(1).fill(100 + frame * 10)))[0];
    for (const frame of [0, 1, 49, 89]) expect(caller[frame * 160 + 80]).toBe(expectedLevel(frame));
    const bot = parseWav(readFileSync(files.bot)).samples;
    expect(bot[49 * 160]).toBe(0);
    expect(bot[50 * 160]).toBe(decodeMulaw(encodeMulaw(new Int16Array(1).fill(-3000)))[0]);

    // And it downloads through an access link like any other recording.
    const link = await app.app.inject({ method: 'GET', url: `/v1/recordings/${id}/access-link`, headers: auth() });
    const download = await app.app.inject({
      method: 'GET',
      url: (link.json() as { download_link: string }).download_link.replace(app.config.publicUrl, ''),
    });
    expect(download.statusCode).toBe(200);
    expect(download.rawPayload.equals(readFileSync(files.mixed))).toBe(true);

    // Deleting removes the files.
    expect((await app.app.inject({ method: 'DELETE', url: `/v1/recordings/${id}`, headers: auth() })).statusCode).toBe(
      200,
    );
    expect(() => statSync(files.mixed)).toThrow();
    expect((await app.app.inject({ method: 'GET', url: `/v1/recordings/${id}`, headers: auth() })).statusCode).toBe(
      404,
    );
  }, 30_000);
});

describe('access links', () => {
  it('validates valid_for_secs, expires, and refuses altered or expired links', async () => {
    const dataDir = tempDataDir();
    const app = await start(dataDir);
    const [id] = await insertRecordings(app, 1);
    const account = await new AccountsRepo(app.database.db).ensureAccount(DEFAULT_ACCOUNT_NAME);
    // A tiny but real file for the row.
    mkdirSync(join(dataDir, 'recordings', account.id, id!), { recursive: true });
    const wav = encodePcm16Wav(new Int16Array(800).fill(1234), 8000);
    writeFileSync(join(dataDir, 'recordings', account.id, id!, 'mixed.wav'), wav);

    for (const bad of ['899', '43201', 'soon']) {
      const res = await app.app.inject({
        method: 'GET',
        url: `/v1/recordings/${id}/access-link?valid_for_secs=${bad}`,
        headers: auth(),
      });
      expect(res.statusCode, bad).toBe(400);
      expect(res.json().info).toContain('valid_for_secs');
    }
    const before = Math.floor(Date.now() / 1000);
    const res = await app.app.inject({ method: 'GET', url: `/v1/recordings/${id}/access-link`, headers: auth() });
    expect(res.statusCode).toBe(200);
    const link = res.json() as { download_link: string; expires: number };
    expect(link.expires - before).toBeGreaterThanOrEqual(3600);
    expect(link.expires - before).toBeLessThanOrEqual(3601);
    const max = (
      await app.app.inject({
        method: 'GET',
        url: `/v1/recordings/${id}/access-link?valid_for_secs=43200`,
        headers: auth(),
      })
    ).json() as { expires: number };
    expect(max.expires - before).toBeGreaterThanOrEqual(43200);

    const path = link.download_link.replace(app.config.publicUrl, '');
    const ok = await app.app.inject({ method: 'GET', url: path });
    expect(ok.statusCode).toBe(200);
    expect(ok.headers['content-type']).toBe('audio/wav');
    expect(Buffer.from(wav).equals(ok.rawPayload)).toBe(true);

    // Altered: another expiry, another track, another signature, none at all.
    const url = new URL(link.download_link);
    const altered = [
      path.replace(`expires=${link.expires}`, `expires=${link.expires + 1}`),
      path.replace('/mixed.wav', '/caller.wav'),
      `${url.pathname}?expires=${link.expires}&signature=${'A'.repeat(43)}`,
      url.pathname,
    ];
    for (const bad of altered) {
      const denied = await app.app.inject({ method: 'GET', url: bad });
      expect(denied.statusCode, bad).toBe(403);
      expect(denied.json().error).toBe('forbidden-error');
    }

    // Expired: a link signed with the server's key for a time already past.
    const signer = new UrlSigner(app.keys.linkSigning);
    const past = Math.floor(Date.now() / 1000) - 1;
    const signature = signer.sign(`recording-download\n${id}\nmixed\n${past}`);
    const expired = await app.app.inject({
      method: 'GET',
      url: `/recording-downloads/${id}/mixed.wav?expires=${past}&signature=${signature}`,
    });
    expect(expired.statusCode).toBe(403);
    expect(expired.json().info).toContain('expired');
  });
});

/** The files live under <dataDir>/recordings/<account>/<id>/. */
function readdirRecording(dataDir: string, id: string): Record<'caller' | 'bot' | 'mixed', string> {
  const root = join(dataDir, 'recordings');
  const account = readdirSync(root).find((name) => readdirSync(join(root, name)).includes(id))!;
  const dir = join(root, account, id);
  return { caller: join(dir, 'caller.wav'), bot: join(dir, 'bot.wav'), mixed: join(dir, 'mixed.wav') };
}
