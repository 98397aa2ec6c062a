import { afterEach, describe, expect, it } from 'vitest';
import { AccountsRepo, DEFAULT_ACCOUNT_NAME } from '../../src/store/accounts-repo.js';
import { CallRecordsRepo } from '../../src/store/call-records-repo.js';
import { type TestApp, createTestApp } from '../helpers/test-app.js';
import { TEST_KEY, removeDir, tempDataDir } from '../helpers/test-data.js';

/**
 * The call records API over a real socket, on the test run's store (SQLite, and PostgreSQL in
 * the postgres project): paging, filters, account isolation, the transcript's formats, deletion,
 * retention, and the calls page's signed links. Rows go straight into the store; the records of
 * real calls are in call-records.test.ts.
 */

let testApp: TestApp | undefined;
let baseUrl = '';
const dirs: string[] = [];

afterEach(async () => {
  await testApp?.close();
  testApp = undefined;
  for (const dir of dirs.splice(0)) removeDir(dir);
});

async function start(dataDir = tempDataDir(), env: Record<string, string> = {}): Promise<TestApp> {
  if (!dirs.includes(dataDir)) dirs.push(dataDir);
  testApp = await createTestApp(env, dataDir);
  baseUrl = await testApp.app.listen({ port: 0, host: '127.0.0.1' });
  return testApp;
}

async function call(
  path: string,
  init: RequestInit & { key?: string } = {},
): Promise<{ status: number; body: any; type: string }> {
  const res = await fetch(`${baseUrl}${path}`, {
    ...init,
    headers: { authorization: `Bearer ${init.key ?? TEST_KEY}`, ...(init.headers as Record<string, string>) },
  });
  const type = res.headers.get('content-type') ?? '';
  return { status: res.status, type, body: type.includes('json') ? await res.json() : await res.text() };
}

const OUTCOMES = ['caller_hung_up', 'bot_ended', 'max_duration'] as const;

/** Rows straight into the store, oldest first (`call-00` is the oldest, one minute apart from 2026-01-01). */
async function insertCalls(app: TestApp, count: number, accountName = DEFAULT_ACCOUNT_NAME, prefix = 'call') {
  const account = await new AccountsRepo(app.database.db).ensureAccount(accountName);
  const repo = new CallRecordsRepo(app.database.db);
  const ids: string[] = [];
  for (let i = 0; i < count; i++) {
    const id = `${prefix}-${String(i).padStart(2, '0')}`;
    const startedAt = new Date(Date.UTC(2026, 0, 1, 0, i)).toISOString();
    await repo.insert({
      id,
      account_id: account.id,
      kind: 'phone',
      bot_config_id: i % 2 === 0 ? 'config-even' : 'config-odd',
      profile: 'telephony_ws_voice_2024_09',
      from_number: '+15550100001',
      to_number: '+15550100002',
      call_sid: `CA${i}`,
      room_name: null,
      recording_id: null,
      node_id: 'node-a',
      status: i === count - 1 ? 'in-progress' : 'ended',
      started_at: startedAt,
      ended_at: i === count - 1 ? null : new Date(Date.parse(startedAt) + 30_000).toISOString(),
      duration_ms: i === count - 1 ? null : 30_000,
      outcome: i === count - 1 ? null : OUTCOMES[i % 3]!,
      end_reason: null,
      summary_json: JSON.stringify({
        counts: {
          turns: 2,
          barge_ins: 1,
          pauses: 1,
          resumes: 0,
          apologies: 0,
          tool_calls: 0,
          provider_errors: 0,
          dtmf_digits: 0,
        },
        median_response_ms: 700 + i,
        services: { stt: 'deepgram', llm: 'openai', tts: 'cartesia' },
      }),
      turns_json: JSON.stringify([{ index: 1, kind: 'answer', engine: 'pipeline', first_frame_sent_ms: 900 }]),
      transcript_json:
        i === count - 1
          ? null
          : JSON.stringify([
              { speaker: 'caller', text: 'Is there a table <for> two & more?', start_ms: 100, end_ms: 1500 },
              { speaker: 'bot', text: 'We have one at', start_ms: 2200, end_ms: 3100, interrupted: true },
            ]),
    });
    ids.push(id);
  }
  return ids;
}

describe('GET /v1/calls', () => {
  it('pages newest first with the recordings’ cursors, and filters by configuration, outcome, status and start time', async () => {
    const app = await start();
    const ids = await insertCalls(app, 25);
    const newestFirst = [...ids].reverse();

    const first = await call('/v1/calls?limit=10');
    expect(first.status).toBe(200);
    expect(first.body.total_count).toBe(25);
    expect(first.body.data.map((c: { id: string }) => c.id)).toEqual(newestFirst.slice(0, 10));
    expect(first.body.data[1]).toMatchObject({
      status: 'ended',
      outcome: OUTCOMES[23 % 3],
      counts: { turns: 2, barge_ins: 1 },
      median_response_ms: 723,
      has_transcript: true,
      from: '+15550100001',
    });
    expect(first.body.data[1].turns).toBeUndefined();
    const second = await call(`/v1/calls?limit=10&starting_after=${newestFirst[9]}`);
    expect(second.body.data.map((c: { id: string }) => c.id)).toEqual(newestFirst.slice(10, 20));
    const back = await call(`/v1/calls?limit=10&ending_before=${newestFirst[10]}`);
    expect(back.body.data.map((c: { id: string }) => c.id)).toEqual(newestFirst.slice(0, 10));
    expect((await call('/v1/calls?starting_after=nope')).status).toBe(400);
    expect((await call('/v1/calls?starting_after=a&ending_before=b')).status).toBe(400);

    const even = await call('/v1/calls?bot_config_id=config-even&limit=100');
    expect(even.body.total_count).toBe(13);
    const maxDuration = await call('/v1/calls?outcome=max_duration');
    expect(maxDuration.body.data.every((c: { outcome: string }) => c.outcome === 'max_duration')).toBe(true);
    expect(maxDuration.body.total_count).toBe(8);
    const live = await call('/v1/calls?status=in-progress');
    expect(live.body.data.map((c: { id: string }) => c.id)).toEqual(['call-24']);
    // Calls that started from 00:05 to before 00:10 (a time with an offset counts as its UTC instant).
    const window = await call(
      `/v1/calls?started_after=${encodeURIComponent('2026-01-01T01:05:00+01:00')}&started_before=2026-01-01T00:10:00Z`,
    );
    expect(window.body.data.map((c: { id: string }) => c.id)).toEqual([
      'call-09',
      'call-08',
      'call-07',
      'call-06',
      'call-05',
    ]);

    for (const bad of ['outcome=hung_up', 'started_after=yesterday', 'status=done', 'limit=0', 'limit=101']) {
      const res = await call(`/v1/calls?${bad}`);
      expect(res.status, bad).toBe(400);
      expect(res.body.error).toBe('invalid-request-error');
    }
  });

  it('keeps each account to its own calls', async () => {
    const app = await start();
    const [mine] = await insertCalls(app, 2);
    const [theirs] = await insertCalls(app, 3, 'other-account', 'other');
    const otherKey = await app.createKey('other-account');

    expect((await call('/v1/calls')).body.data.map((c: { id: string }) => c.id)).toEqual(['call-01', 'call-00']);
    expect((await call('/v1/calls', { key: otherKey })).body.total_count).toBe(3);
    for (const path of [
      `/v1/calls/${theirs}`,
      `/v1/calls/${theirs}/transcript`,
      `/v1/calls/${theirs}/transcript.vtt`,
    ]) {
      const res = await call(path);
      expect(res.status, path).toBe(404);
      expect(res.body.error).toBe('not-found');
    }
    expect((await call(`/v1/calls/${theirs}`, { method: 'DELETE' })).status).toBe(404);
    expect((await call(`/v1/calls/${theirs}`, { key: otherKey })).status).toBe(200);
    expect((await call(`/v1/calls?starting_after=${theirs}`)).status).toBe(400);
    expect((await call(`/v1/calls/${mine}`, { key: otherKey })).status).toBe(404);
    expect((await call('/v1/calls', { key: 'not-a-key' })).status).toBe(401);
  });
});

describe('one call', () => {
  it('answers the record with its turns, the transcript as JSON or WebVTT, and deletes both', async () => {
    const app = await start();
    const ids = await insertCalls(app, 2);
    const [done, live] = ids as [string, string];

    const one = await call(`/v1/calls/${done}`);
    expect(one.body).toMatchObject({ id: done, turns: [{ index: 1, kind: 'answer', first_frame_sent_ms: 900 }] });

    const json = await call(`/v1/calls/${done}/transcript`);
    expect(json.body.entries).toHaveLength(2);
    const vtt = await call(`/v1/calls/${done}/transcript`, {
      headers: { accept: 'text/html, text/vtt;q=0.9, application/json;q=0.5' },
    });
    expect(vtt.type).toMatch(/^text\/vtt/);
    expect(vtt.body).toBe(
      [
        'WEBVTT',
        '',
        '1',
        '00:00:00.100 --> 00:00:01.500',
        '<v Caller>Is there a table &lt;for&gt; two &amp; more?</v>',
        '',
        '2',
        '00:00:02.200 --> 00:00:03.100',
        '<v Bot>We have one at</v>',
        '',
      ].join('\n'),
    );
    expect(
      (await call(`/v1/calls/${done}/transcript`, { headers: { accept: 'text/vtt;q=0.2, application/json' } })).type,
    ).toMatch(/json/);
    expect((await call(`/v1/calls/${done}/transcript.json`)).body).toEqual(json.body);
    expect((await call(`/v1/calls/${done}/transcript.vtt`)).body).toBe(vtt.body);

    // A call in progress has no transcript yet, and cannot be deleted.
    const pending = await call(`/v1/calls/${live}/transcript`);
    expect(pending.status).toBe(404);
    expect(pending.body.info).toMatch(/in progress/);
    expect((await call(`/v1/calls/${live}`, { method: 'DELETE' })).status).toBe(400);

    const deleted = await call(`/v1/calls/${done}`, { method: 'DELETE' });
    expect(deleted.status).toBe(200);
    expect(deleted.body.id).toBe(done);
    expect((await call(`/v1/calls/${done}`)).status).toBe(404);
    expect((await call(`/v1/calls/${done}/transcript`)).status).toBe(404);
    expect((await call('/v1/calls/x'.padEnd(140, 'x'))).status).toBe(400);
  });

  it('is deleted with its transcript once older than SWITCHBOARD_CALL_RETENTION_DAYS', async () => {
    const dataDir = tempDataDir();
    const app = await start(dataDir);
    await insertCalls(app, 3);
    const recent = await insertCalls(app, 1, DEFAULT_ACCOUNT_NAME, 'recent');
    await new CallRecordsRepo(app.database.db).complete(recent[0]!, { started_at: new Date().toISOString() });
    await app.close();
    testApp = undefined;
    // The retention sweep runs as the server starts (and hourly after).
    await start(dataDir, { SWITCHBOARD_CALL_RETENTION_DAYS: '30' });
    const left = await eventuallyList((ids) => ids.length === 1);
    expect(left).toEqual(['recent-00']);
  });
});

async function eventuallyList(done: (ids: string[]) => boolean): Promise<string[]> {
  for (let i = 0; ; i++) {
    const ids = (await call('/v1/calls')).body.data.map((c: { id: string }) => c.id) as string[];
    if (done(ids) || i > 100) return ids;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe('the calls page', () => {
  it('is served self-contained, and its signed link reads one account’s calls, read-only, until it expires', async () => {
    const app = await start();
    await insertCalls(app, 2);
    await insertCalls(app, 1, 'other-account', 'other');

    const page = await fetch(`${baseUrl}/calls-page`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-security-policy')).toContain("connect-src 'self'");
    const html = await page.text();
    expect(html).not.toMatch(/(src|href)="https?:/);

    const link = await call('/v1/calls/page-link?valid_for_secs=600');
    expect(link.status).toBe(200);
    expect(link.body.url).toMatch(/\/calls-page#token=swpage\./);
    const token = decodeURIComponent(link.body.url.split('#token=')[1]);
    const list = await call('/v1/calls', { key: token });
    expect(list.status).toBe(200);
    expect(list.body.data.map((c: { id: string }) => c.id)).toEqual(['call-01', 'call-00']);
    expect((await call('/v1/calls/call-00/transcript.vtt', { key: token })).status).toBe(200);
    // Read-only, calls and recordings only.
    expect((await call('/v1/calls/call-00', { key: token, method: 'DELETE' })).status).toBe(403);
    expect((await call('/v1/bots/twilio-config', { key: token })).status).toBe(403);
    expect((await call('/v1/calls/page-link', { key: token })).status).toBe(200);
    // Forged, altered or expired: refused.
    const [prefix, account, expires, signature] = token.split('.') as [string, string, string, string];
    const otherAccount = (await new AccountsRepo(app.database.db).ensureAccount('other-account')).id;
    for (const bad of [
      `${prefix}.${otherAccount}.${expires}.${signature}`,
      `${prefix}.${account}.${Number(expires) + 1}.${signature}`,
      `${prefix}.${account}.${Math.floor(Date.now() / 1000) - 1}.${signature}`,
      `${prefix}.${account}`,
    ]) {
      const res = await call('/v1/calls', { key: bad });
      expect(res.status, bad).toBe(401);
    }
  });

  it('is in the OpenAPI document', async () => {
    await start();
    const doc = (await (await fetch(`${baseUrl}/openapi.json`)).json()) as {
      paths: Record<string, Record<string, unknown>>;
    };
    expect(Object.keys(doc.paths)).toEqual(
      expect.arrayContaining([
        '/calls',
        '/calls/{id}',
        '/calls/{id}/transcript',
        '/calls/{id}/transcript.vtt',
        '/calls/page-link',
        '/calls-page',
      ]),
    );
    expect(doc.paths['/calls/{id}']).toHaveProperty('delete');
  });
});
