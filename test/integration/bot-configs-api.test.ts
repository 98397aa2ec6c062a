import type { InjectOptions } from 'fastify';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type TestApp, createTestApp } from '../helpers/test-app.js';
import { auth, removeDir, sampleConfig } from '../helpers/test-data.js';

let t: TestApp;
beforeEach(async () => {
  t = await createTestApp();
});
afterEach(async () => {
  await t.close();
  removeDir(t.dataDir);
});

async function create(body: unknown = sampleConfig(), key?: string) {
  return t.app.inject({ method: 'POST', url: '/v1/bots/twilio-config', headers: auth(key), payload: body as object });
}

describe('telephony bot configurations: CRUD', () => {
  it('creates, reads, lists, replaces and deletes a configuration', async () => {
    const created = await create();
    expect(created.statusCode).toBe(200);
    const view = created.json();
    expect(view.id).toMatch(/^[0-9a-f-]{36}$/);
    expect(view.wssUrl).toBe(`ws://localhost:8080/ws/twilio/${view.id}`);
    expect(typeof view.domain).toBe('string');
    expect(view.twiml).toContain(`<Stream url="ws://localhost:8080/ws/twilio/${view.id}">`);
    expect(view.botConfig.bot_profile).toBe('telephony_ws_voice_2024_09');
    expect(view.botConfig.services).toEqual({ stt: 'deepgram', llm: 'openai', tts: 'cartesia' });
    expect(view.botConfig.max_duration).toBe(600);
    expect(view.botConfig.config).toHaveLength(3);

    const read = await t.app.inject({ method: 'GET', url: `/v1/bots/twilio-config/${view.id}`, headers: auth() });
    expect(read.statusCode).toBe(200);
    expect(read.json()).toEqual(view);

    const list = await t.app.inject({ method: 'GET', url: '/v1/bots/twilio-config', headers: auth() });
    expect(list.statusCode).toBe(200);
    expect(list.json()).toEqual([view]);

    const replaced = await t.app.inject({
      method: 'POST',
      url: `/v1/bots/twilio-config/${view.id}`,
      headers: auth(),
      payload: sampleConfig({
        max_duration: 120,
        services: { stt: 'deepgram', llm: 'anthropic', tts: 'elevenlabs' },
        api_keys: { deepgram: 'dg-test-key-abcdefgh', anthropic: 'sk-ant-test-0123', elevenlabs: 'el-test-0123' },
      }),
    });
    expect(replaced.statusCode).toBe(200);
    expect(replaced.json().id).toBe(view.id);
    expect(replaced.json().botConfig.max_duration).toBe(120);
    expect(replaced.json().botConfig.services.llm).toBe('anthropic');

    const deleted = await t.app.inject({ method: 'DELETE', url: `/v1/bots/twilio-config/${view.id}`, headers: auth() });
    expect(deleted.statusCode).toBe(200);
    expect(deleted.json()).toEqual({ deleted: true, id: view.id });
    const gone = await t.app.inject({ method: 'GET', url: `/v1/bots/twilio-config/${view.id}`, headers: auth() });
    expect(gone.statusCode).toBe(404);
    expect(gone.json().error).toBe('not-found');
  });

  it('accepts the alias twilio_ws_voice_2024_09, vad options one by one, and speech-to-speech profiles with only an llm', async () => {
    const alias = await create(
      sampleConfig({
        bot_profile: 'twilio_ws_voice_2024_09',
        config: [
          {
            service: 'vad',
            options: [
              { name: 'stop_secs', value: 0.5 },
              { name: 'confidence', value: 0.6 },
            ],
          },
        ],
      }),
    );
    expect(alias.statusCode).toBe(200);
    expect(alias.json().botConfig.bot_profile).toBe('telephony_ws_voice_2024_09');

    for (const profile of ['openai_realtime_beta_2024_10', 'gemini_multimodal_live_2024_12']) {
      const llm = profile.startsWith('openai') ? 'openai' : 'gemini';
      const s2s = await create({ bot_profile: profile, services: { llm }, api_keys: { [llm]: 'key-0123456789' } });
      expect(s2s.statusCode).toBe(200);
      expect(s2s.json().botConfig.max_duration).toBe(600);
    }
    // The speech-to-speech provider must match the profile, and have a key.
    const mismatched = await create({
      bot_profile: 'gemini_multimodal_live_2024_12',
      services: { llm: 'openai' },
      api_keys: { openai: 'k' },
    });
    expect(mismatched.json().info).toContain(
      'profile gemini_multimodal_live_2024_12 runs on services.llm "gemini", not "openai"',
    );
    const keyless = await create({ bot_profile: 'openai_realtime_beta_2024_10', services: { llm: 'openai_realtime' } });
    expect(keyless.json().info).toContain('no API key: set api_keys.openai');
  });

  it('pages newest first with limit, starting_after and ending_before', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await create(sampleConfig({ max_duration: 100 + i }))).json().id);
    const newestFirst = [...ids].reverse();
    const get = (query: string) =>
      t.app.inject({ method: 'GET', url: `/v1/bots/twilio-config?${query}`, headers: auth() });

    const first = await get('limit=2');
    expect(first.json().map((c: { id: string }) => c.id)).toEqual(newestFirst.slice(0, 2));
    const second = await get(`limit=2&starting_after=${newestFirst[1]}`);
    expect(second.json().map((c: { id: string }) => c.id)).toEqual(newestFirst.slice(2, 4));
    const last = await get(`limit=2&starting_after=${newestFirst[3]}`);
    expect(last.json().map((c: { id: string }) => c.id)).toEqual(newestFirst.slice(4));
    const back = await get(`limit=2&ending_before=${newestFirst[4]}`);
    expect(back.json().map((c: { id: string }) => c.id)).toEqual(newestFirst.slice(2, 4));
    const top = await get(`ending_before=${newestFirst[0]}`);
    expect(top.json()).toEqual([]);

    for (const bad of [
      'limit=0',
      'limit=101',
      'limit=abc',
      'starting_after=nope',
      `starting_after=${ids[0]}&ending_before=${ids[1]}`,
    ]) {
      const res = await get(bad);
      expect(res.statusCode, bad).toBe(400);
      expect(res.json().error, bad).toBe('invalid-request-error');
    }
  });
});

describe('telephony bot configurations: errors', () => {
  it('answers every bad request with the hosted error shape', async () => {
    const cases: Array<{ name: string; req: InjectOptions; status: number; error: string }> = [
      {
        name: 'no header',
        req: { method: 'GET', url: '/v1/bots/twilio-config' },
        status: 400,
        error: 'authorization-header-error',
      },
      {
        name: 'not bearer',
        req: { method: 'GET', url: '/v1/bots/twilio-config', headers: { authorization: 'Token abc' } },
        status: 400,
        error: 'authorization-header-error',
      },
      {
        name: 'wrong key',
        req: { method: 'GET', url: '/v1/bots/twilio-config', headers: auth('sb_wrong') },
        status: 401,
        error: 'authentication-error',
      },
      {
        name: 'malformed json',
        req: {
          method: 'POST',
          url: '/v1/bots/twilio-config',
          headers: { ...auth(), 'content-type': 'application/json' },
          payload: '{"bot_profile": ',
        },
        status: 400,
        error: 'json-parsing-error',
      },
      {
        name: 'wrong content type',
        req: {
          method: 'POST',
          url: '/v1/bots/twilio-config',
          headers: { ...auth(), 'content-type': 'text/plain' },
          payload: 'hello',
        },
        status: 415,
        error: 'unsupported-media-type',
      },
      {
        name: 'no body',
        req: { method: 'POST', url: '/v1/bots/twilio-config', headers: auth() },
        status: 400,
        error: 'invalid-request-error',
      },
      {
        name: 'unknown id',
        req: { method: 'GET', url: '/v1/bots/twilio-config/00000000-0000-0000-0000-000000000000', headers: auth() },
        status: 404,
        error: 'not-found',
      },
      {
        name: 'replace unknown id',
        req: { method: 'POST', url: '/v1/bots/twilio-config/nope', headers: auth(), payload: sampleConfig() },
        status: 404,
        error: 'not-found',
      },
      {
        name: 'unknown route',
        req: { method: 'GET', url: '/v1/nothing-here', headers: auth() },
        status: 404,
        error: 'not-found',
      },
      { name: 'unknown top route', req: { method: 'GET', url: '/nothing' }, status: 404, error: 'not-found' },
    ];
    for (const c of cases) {
      const res = await t.app.inject(c.req);
      expect(res.statusCode, c.name).toBe(c.status);
      expect(res.json().error, c.name).toBe(c.error);
      expect(typeof res.json().info, c.name).toBe('string');
    }
  });

  it('names each invalid field path', async () => {
    const res = await create({
      bot_profile: 'voice_2099_01',
      services: { stt: 'deepgram', llm: 'nope' },
      config: [
        { service: 'vad', options: [{ name: 'params', value: { stop_secs: 'soon' } }] },
        {
          service: 'llm',
          options: [
            { name: 'run_on_config', value: 'yes' },
            { name: 'temprature', value: 1 },
          ],
        },
      ],
      max_duration: -5,
      surprise: true,
    });
    expect(res.statusCode).toBe(400);
    const { error, info } = res.json();
    expect(error).toBe('invalid-request-error');
    for (const fragment of [
      'bot_profile: must be one of',
      'services.llm: unknown llm provider "nope"',
      'config.0.options.0.value.stop_secs',
      'config.1.options.0.value',
      'config.1.options.1.name: unknown llm option "temprature"',
      'max_duration',
      'surprise',
    ]) {
      expect(info).toContain(fragment);
    }
  });

  it('reports a missing provider key, a bad service option and an unavailable provider when the configuration is written', async () => {
    const noKey = await create(
      sampleConfig({ api_keys: { openai: 'sk-test-openai-0123456789', deepgram: 'dg-test-key-abcdefgh' } }),
    );
    expect(noKey.statusCode).toBe(400);
    expect(noKey.json().error).toBe('invalid-request-error');
    expect(noKey.json().info).toContain(
      'services.tts: cartesia: no API key: set api_keys.cartesia in the bot configuration or CARTESIA_API_KEY on the server',
    );

    // One vendor key serves that vendor's services: api_keys.deepgram also keys deepgram_tts.
    const shared = await create(sampleConfig({ services: { stt: 'deepgram', llm: 'openai', tts: 'deepgram_tts' } }));
    expect(shared.statusCode).toBe(200);

    const badOption = await create(sampleConfig({ service_options: { deepgram: { encoding: 'linear16' } } }));
    expect(badOption.statusCode).toBe(400);
    expect(badOption.json().info).toContain('service_options.deepgram.encoding cannot be set');

    const unavailable = await create(sampleConfig({ services: { stt: 'assemblyai', llm: 'openai', tts: 'cartesia' } }));
    expect(unavailable.statusCode).toBe(400);
    expect(unavailable.json().info).toContain(
      'services.stt: "assemblyai" is not available in this build (available: deepgram)',
    );
  });

  it('requires stt, llm and tts for pipeline profiles and checks dial-out targets', async () => {
    const missing = await create(sampleConfig({ services: { llm: 'openai' } }));
    expect(missing.json().info).toContain('services.stt: profile telephony_ws_voice_2024_09 needs a stt provider');
    const dialout = await create(
      sampleConfig({ dialout_settings: [{ phoneNumber: '555' }, { phoneNumber: '+15550100111', sipUri: 'sip:a@b' }] }),
    );
    expect(dialout.statusCode).toBe(400);
    expect(dialout.json().info).toContain('dialout_settings.0.phoneNumber');
    expect(dialout.json().info).toContain(
      'dialout_settings.1: each dial-out target needs exactly one of phoneNumber or sipUri',
    );

    // The same account rules as POST /v1/bots/start: a number to call from, caller ids of this account.
    const target = { phoneNumber: '+16175550110' };
    const noNumber = await create(sampleConfig({ dialout_settings: [target] }));
    expect(noNumber.json().info).toContain('dialout_settings[0]: dial-out needs a number to call from');
    const bought = await t.app.inject({
      method: 'POST',
      url: '/v1/buy-phone-number',
      headers: auth(),
      payload: { number: '+16175550111' },
    });
    const wrongId = await create(sampleConfig({ dialout_settings: [{ ...target, callerId: 'not-a-number-id' }] }));
    expect(wrongId.json().info).toContain('dialout_settings[0].callerId: no purchased number with id not-a-number-id');
    const ok = await create(sampleConfig({ dialout_settings: [{ ...target, callerId: bought.json().id }] }));
    expect(ok.statusCode, ok.body).toBe(200);
    expect(ok.json().botConfig.dialout_settings).toEqual([{ ...target, callerId: bought.json().id }]);
  });

  it('refuses bodies over the size limit and keeps serving', async () => {
    const big = await t.app.inject({
      method: 'POST',
      url: '/v1/bots/twilio-config',
      headers: { ...auth(), 'content-type': 'application/json' },
      payload: JSON.stringify(sampleConfig({ rtvi_client_version: 'x'.repeat(2 * 1024 * 1024) })),
    });
    expect(big.statusCode).toBe(413);
    expect(big.json().error).toBe('payload-too-large');
    expect((await create()).statusCode).toBe(200);
  });
});

describe('accounts and secrets', () => {
  it('hides one account’s configurations from another', async () => {
    const other = await t.createKey('acme');
    const mine = (await create()).json();
    const theirs = (await create(sampleConfig(), other)).json();
    expect(theirs.domain).not.toBe(mine.domain);

    const list = await t.app.inject({ method: 'GET', url: '/v1/bots/twilio-config', headers: auth(other) });
    expect(list.json().map((c: { id: string }) => c.id)).toEqual([theirs.id]);
    for (const req of [
      { method: 'GET' as const, url: `/v1/bots/twilio-config/${mine.id}` },
      { method: 'POST' as const, url: `/v1/bots/twilio-config/${mine.id}`, payload: sampleConfig() },
      { method: 'DELETE' as const, url: `/v1/bots/twilio-config/${mine.id}` },
    ]) {
      const res = await t.app.inject({ ...req, headers: auth(other) });
      expect(res.statusCode, req.method).toBe(404);
    }
    const cursor = await t.app.inject({
      method: 'GET',
      url: `/v1/bots/twilio-config?starting_after=${mine.id}`,
      headers: auth(other),
    });
    expect(cursor.statusCode).toBe(400);
    expect(
      (await t.app.inject({ method: 'GET', url: `/v1/bots/twilio-config/${mine.id}`, headers: auth() })).statusCode,
    ).toBe(200);
  });

  it('keeps the status_callback hmac sealed at rest and returns it whole to its owner', async () => {
    const hmac = Buffer.from('status-callback-hmac-secret-42').toString('base64');
    const callback = { url: 'https://hooks.example.com/calls', hmac };
    const created = await t.app.inject({
      method: 'POST',
      url: '/v1/bots/twilio-config',
      headers: auth(),
      payload: sampleConfig({ status_callback: callback }),
    });
    expect(created.statusCode, created.body).toBe(200);
    expect(created.json().botConfig.status_callback).toEqual(callback);
    const rows = await t.database.db.selectFrom('bot_configs').selectAll().execute();
    expect(rows.map((r) => r.secrets_sealed)).toEqual([expect.stringMatching(/^v1:/)]);
    expect(JSON.stringify(rows)).not.toContain(hmac);
    expect(JSON.parse(rows[0]!.body_json).status_callback).toEqual({ url: callback.url });
    for (const file of readdirSync(t.dataDir)) {
      if (!file.startsWith('switchboard.sqlite')) continue;
      expect(readFileSync(join(t.dataDir, file)).toString('latin1'), file).not.toContain(hmac);
    }
    const read = await t.app.inject({
      method: 'GET',
      url: `/v1/bots/twilio-config/${created.json().id}`,
      headers: auth(),
    });
    expect(read.json().botConfig.status_callback).toEqual(callback);
    // Replaced without a status_callback: the secret goes with it.
    const replaced = await t.app.inject({
      method: 'POST',
      url: `/v1/bots/twilio-config/${created.json().id}`,
      headers: auth(),
      payload: sampleConfig(),
    });
    expect(replaced.json().botConfig.status_callback).toBeUndefined();
    expect(
      (await t.database.db.selectFrom('bot_configs').select('secrets_sealed').executeTakeFirstOrThrow()).secrets_sealed,
    ).toBeNull();
  });

  it('masks provider keys on read, keeps them encrypted at rest, and keeps them when sent back masked', async () => {
    const view = (await create()).json();
    expect(view.botConfig.api_keys).toEqual({ openai: '****6789', deepgram: '****efgh', cartesia: '****6789' });
    const raw = JSON.stringify(view);
    expect(raw).not.toContain('sk-test-openai-0123456789');

    // At rest: the stored row (on either store) and SQLite's files hold only the sealed form.
    const rows = await t.database.db.selectFrom('bot_configs').selectAll().execute();
    expect(rows.map((r) => r.api_keys_sealed)).toEqual([expect.stringMatching(/^v1:/)]);
    expect(JSON.stringify(rows)).not.toContain('sk-test-openai-0123456789');
    expect(JSON.stringify(rows)).not.toContain('dg-test-key-abcdefgh');
    for (const file of readdirSync(t.dataDir)) {
      if (!file.startsWith('switchboard.sqlite')) continue;
      const bytes = readFileSync(join(t.dataDir, file)).toString('latin1');
      expect(bytes, file).not.toContain('sk-test-openai-0123456789');
      expect(bytes, file).not.toContain('dg-test-key-abcdefgh');
    }

    const roundTrip = { ...sampleConfig(), api_keys: { ...view.botConfig.api_keys, cartesia: 'ct-new-key-1234567' } };
    const replaced = await t.app.inject({
      method: 'POST',
      url: `/v1/bots/twilio-config/${view.id}`,
      headers: auth(),
      payload: roundTrip,
    });
    expect(replaced.statusCode).toBe(200);
    expect(replaced.json().botConfig.api_keys).toEqual({
      openai: '****6789',
      deepgram: '****efgh',
      cartesia: '****4567',
    });
  });
});

describe('operator endpoints', () => {
  it('serves /healthz, /openapi.json and /docs without a key', async () => {
    const health = await t.app.inject({ method: 'GET', url: '/healthz' });
    expect(health.statusCode).toBe(200);
    expect(health.json().status).toBe('ok');
    const openapi = await t.app.inject({ method: 'GET', url: '/openapi.json' });
    expect(openapi.statusCode).toBe(200);
    const doc = openapi.json();
    expect(doc.openapi).toMatch(/^3\./);
    expect(Object.keys(doc.paths)).toEqual(
      expect.arrayContaining([
        '/bots/start',
        '/bots/twilio-config',
        '/bots/twilio-config/{id}',
        '/list-available-numbers',
        '/buy-phone-number',
        '/',
        '/recordings',
      ]),
    );
    expect(doc.components.schemas.DomainConfigRequest.properties.properties.properties).toHaveProperty(
      'pinless_dialin',
    );
    expect(doc.components.schemas.TelephonyConfigRequest.properties.bot_profile.enum).toContain(
      'telephony_ws_voice_2024_09',
    );
    const docs = await t.app.inject({ method: 'GET', url: '/docs/' });
    expect(docs.statusCode).toBe(200);
    expect(docs.headers['content-type']).toContain('text/html');
    // The UI's assets, relayed from the app built on the first request: a HEAD gives the GET's length.
    const css = await t.app.inject({ method: 'GET', url: '/docs/static/swagger-ui.css' });
    expect(css.statusCode).toBe(200);
    expect(css.headers['content-type']).toContain('text/css');
    const head = await t.app.inject({ method: 'HEAD', url: '/docs/static/swagger-ui.css' });
    expect({ status: head.statusCode, length: head.headers['content-length'], body: head.body }).toEqual({
      status: 200,
      length: String(css.rawPayload.length),
      body: '',
    });
    expect((await t.app.inject({ method: 'GET', url: '/docs/static/nothing.js' })).statusCode).toBe(404);
  });
});
