import { afterEach, describe, expect, it } from 'vitest';
import { RoomTokens } from '../../src/rooms/room-tokens.js';
import { type TestApp, createTestApp } from '../helpers/test-app.js';
import { auth, removeDir, sampleConfig } from '../helpers/test-data.js';

let t: TestApp | undefined;

afterEach(async () => {
  if (!t) return;
  await t.close();
  removeDir(t.dataDir);
  t = undefined;
});

async function app(env: Record<string, string> = {}): Promise<TestApp> {
  t = await createTestApp({ SWITCHBOARD_PUBLIC_URL: 'https://bots.example.com', ...env });
  return t;
}

/** A valid start-bot body (the telephony sample's services and keys), with overrides. */
function startBody(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return sampleConfig({ bot_profile: 'voice_2024_10', max_duration: 300, ...overrides });
}

async function start(payload: unknown, headers: Record<string, string> = auth()) {
  return t!.app.inject({ method: 'POST', url: '/v1/bots/start', headers, payload: payload as object });
}

/** A 400 with the error type and an info containing each of `parts`. */
async function expectRefused(payload: unknown, ...parts: string[]): Promise<void> {
  const res = await start(payload);
  expect(res.statusCode, res.body).toBe(400);
  const body = res.json();
  expect(body.error).toBe('invalid-request-error');
  for (const part of parts) expect(body.info).toContain(part);
}

describe('POST /v1/bots/start', () => {
  it.each(['voice_2024_10', 'voice_2024_08', 'natural_conversation_2024_11', 'vision_2024_10', 'vision_2024_08'])(
    'starts a %s bot in a new room and answers room_url and a token for that room',
    async (profile) => {
      const { dataDir } = await app();
      const res = await start(startBody({ bot_profile: profile }));
      expect(res.statusCode, res.body).toBe(200);
      const body = res.json();
      expect(Object.keys(body).sort()).toEqual(['room_url', 'token']);
      expect(body.room_url).toMatch(/^https:\/\/bots\.example\.com\/rooms\/[A-Za-z0-9_-]{12}$/);
      const name = body.room_url.split('/rooms/')[1];
      const check = RoomTokens.forDataDir(dataDir).verify(body.token, name);
      expect(check.ok).toBe(true);
      // The token lasts as long as the bot may: max_duration.
      if (check.ok) expect(check.claims.expiresAtSecs * 1000 - Date.now()).toBeGreaterThan(295_000);
      expect(RoomTokens.forDataDir(dataDir).verify(body.token, 'another-room')).toMatchObject({
        ok: false,
        why: 'wrong-room',
      });

      const page = await t!.app.inject({ method: 'GET', url: `/rooms/${name}` });
      expect(page.statusCode).toBe(200);
      expect(page.headers['content-type']).toContain('text/html');
      expect(page.body).toContain('<title>Switchboard room</title>');
    },
  );

  it('gives every start its own room', async () => {
    await app();
    const a = (await start(startBody())).json();
    const b = (await start(startBody())).json();
    expect(a.room_url).not.toBe(b.room_url);
    expect(a.token).not.toBe(b.token);
  });

  it('accepts the whole start-bot body of the spec', async () => {
    await app();
    const res = await start(
      startBody({
        service_options: [{ deepgram: { smart_format: true } }],
        recording_settings: {
          type: 'cloud',
          recordings_bucket: { bucket_name: 'b', bucket_region: 'us-west-2', allow_api_access: true },
        },
        webhook_tools: { '*': { url: 'https://tools.example.com/hook', method: 'POST', streaming: false } },
        rtvi_client_version: '0.2.3',
      }),
    );
    expect(res.statusCode, res.body).toBe(200);
  });

  it('refuses the telephony profile with a clear way forward, and takes speech-to-speech profiles with a matching provider', async () => {
    await app();
    await expectRefused(
      startBody({ bot_profile: 'telephony_ws_voice_2024_09' }),
      'bot_profile: telephony_ws_voice_2024_09 runs over a phone number',
      'POST /v1/bots/twilio-config',
    );
    await expectRefused(
      startBody({ bot_profile: 'twilio_ws_voice_2024_09' }),
      'bot_profile: telephony_ws_voice_2024_09 runs over a phone number',
    );
    await expectRefused(
      startBody({ bot_profile: 'gemini_multimodal_live_2024_12', services: { llm: 'openai' } }),
      'profile gemini_multimodal_live_2024_12 runs on services.llm "gemini", not "openai"',
    );
    const live = await t!.app.inject({
      method: 'POST',
      url: '/v1/bots/start',
      headers: auth(),
      payload: startBody({
        bot_profile: 'gemini_multimodal_live_2024_12',
        services: { llm: 'gemini' },
        api_keys: { gemini: 'g-test-key-0123456789' },
      }),
    });
    expect(live.statusCode, live.body).toBe(200);
  });

  it('names each invalid field', async () => {
    await app();
    const { bot_profile: _omit, ...withoutProfile } = startBody();
    await expectRefused(withoutProfile, 'bot_profile:');
    await expectRefused(startBody({ bot_profile: 'voice_2099_01' }), 'bot_profile: must be one of:');
    await expectRefused(
      startBody({ services: { llm: 'openai', tts: 'cartesia' } }),
      'services.stt: profile voice_2024_10 needs a stt provider',
    );
    await expectRefused(
      startBody({ services: { stt: 'deepgram', llm: 'nope', tts: 'cartesia' } }),
      'services.llm: unknown llm provider "nope"',
    );
    await expectRefused(
      startBody({ services: { stt: 'deepgram', llm: 'openai', tts: 'cartesia', vad: 'silero' } }),
      'services:',
    );
    await expectRefused(startBody({ room: { geo: 'eu' } }), 'Unrecognized key');
    await expectRefused(startBody({ max_duration: 0 }), 'max_duration:');
    await expectRefused(startBody({ max_duration: 86_401 }), 'max_duration:');
    await expectRefused(startBody({ max_duration: 1.5 }), 'max_duration:');
    await expectRefused(
      startBody({ config: [{ service: 'tts', options: [{ name: 'colour', value: 'blue' }] }] }),
      'config.0.options.0.name: unknown tts option "colour"',
    );
    await expectRefused(
      startBody({ config: [{ service: 'vad', options: [{ name: 'stop_secs', value: 'long' }] }] }),
      'config.0.options.0.value:',
    );
    await expectRefused(startBody({ config: [{ service: 'video', options: [] }] }), 'config.0.service:');
    await expectRefused(startBody({ api_keys: { openai: '' } }), 'api_keys.openai:');
    await expectRefused(startBody({ service_options: 'fast' }), 'service_options:');
    await expectRefused(startBody({ recording_settings: { type: 'local' } }), 'recording_settings.type:');
    await expectRefused(startBody({ webhook_tools: { lookup: { url: 'not a url' } } }), 'webhook_tools.lookup.url:');
    await expectRefused(startBody({ rtvi_client_version: '' }), 'rtvi_client_version:');
  });

  it('reports a provider that cannot start (a missing key) when the bot is started, not later', async () => {
    await app();
    await expectRefused(
      startBody({ api_keys: { deepgram: 'dg-test-key-abcdefgh', cartesia: 'sk_car_test_0123456789' } }),
      'services.llm:',
      'OPENAI_API_KEY',
    );
  });

  it('validates dialin_settings in both spellings and hands the named call to the bot', async () => {
    await app();
    await expectRefused(startBody({ dialin_settings: {} }), 'dialin_settings: needs callId (or call_id)');
    await expectRefused(
      startBody({ dialin_settings: { callId: 'a', call_id: 'b' } }),
      'dialin_settings: callId and call_id disagree',
    );
    await expectRefused(
      startBody({ dialin_settings: { callId: 'a', callDomain: 'x', call_domain: 'y' } }),
      'dialin_settings: callDomain and call_domain disagree',
    );
    await expectRefused(startBody({ dialin_settings: { callId: 7 } }), 'dialin_settings.callId:');
    for (const dialin of [
      { callId: 'c-1', callDomain: 'd-1' },
      { call_id: 'c-1', call_domain: 'd-1' },
    ]) {
      const res = await start(startBody({ dialin_settings: dialin }));
      expect(res.statusCode).toBe(404);
      expect(res.json()).toEqual({ error: 'not-found', info: 'dialin_settings: no dial-in call c-1 is waiting' });
    }
  });

  it('validates dialout_settings as an array or a single object', async () => {
    await app();
    await expectRefused(startBody({ dialout_settings: [{ phoneNumber: '555-0100' }] }), 'dialout_settings', 'E.164');
    await expectRefused(startBody({ dialout_settings: { phoneNumber: '555-0100' } }), 'dialout_settings', 'E.164');
    await expectRefused(
      startBody({ dialout_settings: [{ phoneNumber: '+15550100123', sipUri: 'sip:+15550100123@example.com' }] }),
      'exactly one of phoneNumber or sipUri',
    );
    await expectRefused(startBody({ dialout_settings: [] }), 'dialout_settings');
    await expectRefused(startBody({ dialout_settings: 'call me' }), 'dialout_settings');
  });

  it('checks dial-out targets against the account before a room opens: a number to call from, caller ids, reachable destinations', async () => {
    await app();
    // No purchased number yet: nothing to call from.
    await expectRefused(
      startBody({ dialout_settings: { phoneNumber: '+14155550123' } }),
      'dialout_settings[0]: dial-out needs a number to call from',
      'POST /v1/buy-phone-number',
    );
    const bought = await t!.app.inject({
      method: 'POST',
      url: '/v1/buy-phone-number',
      headers: auth(),
      payload: { number: '+12125550101' },
    });
    expect(bought.statusCode).toBe(200);
    // callerId is a purchased number's id, not the number, and must be this account's.
    await expectRefused(
      startBody({ dialout_settings: [{ phoneNumber: '+14155550123', callerId: '+12125550101' }] }),
      'dialout_settings[0].callerId: no purchased number with id +12125550101',
    );
    const other = await t!.createKey('other');
    const theirs = await t!.app.inject({
      method: 'POST',
      url: '/v1/buy-phone-number',
      headers: auth(other),
      payload: { number: '+12125550102' },
    });
    await expectRefused(
      startBody({ dialout_settings: [{ phoneNumber: '+14155550123', callerId: theirs.json().id }] }),
      `no purchased number with id ${theirs.json().id}`,
    );
    // The sandbox carrier never rings a real phone: only its fictional numbers are reachable.
    await expectRefused(
      startBody({ dialout_settings: [{ phoneNumber: '+14155550123' }, { phoneNumber: '+14155551234' }] }),
      'dialout_settings[1]: +14155551234 is not a sandbox number',
    );
    await expectRefused(
      startBody({ dialout_settings: { sipUri: 'sip:+14155551234@pbx.example.com' } }),
      'dialout_settings[0]: +14155551234 is not a sandbox number',
    );
    // Well-formed targets in both forms start a room (the calls themselves are in dialout.test.ts).
    for (const dialout of [
      [{ phoneNumber: '+14155550123', callerId: bought.json().id }],
      { sipUri: 'sip:+14155550124@sandbox.example.com' },
    ]) {
      const res = await start(startBody({ dialout_settings: dialout }));
      expect(res.statusCode, res.body).toBe(200);
    }
  });

  it('speaks the API’s error shapes for auth, JSON and capacity', async () => {
    await app({ SWITCHBOARD_MAX_ROOMS: '1' });
    expect((await start(startBody(), {})).json()).toMatchObject({ error: 'authorization-header-error' });
    expect((await start(startBody(), auth('sb_wrong_key_000000000000'))).statusCode).toBe(401);
    const notJson = await t!.app.inject({
      method: 'POST',
      url: '/v1/bots/start',
      headers: { ...auth(), 'content-type': 'application/json' },
      payload: '{"bot_profile":',
    });
    expect(notJson.json()).toMatchObject({ error: 'json-parsing-error' });
    expect((await start(startBody())).statusCode).toBe(200);
    const full = await start(startBody());
    expect(full.statusCode).toBe(503);
    expect(full.json()).toEqual({
      error: 'service-unavailable',
      info: 'this server is running its maximum of 1 rooms; try again later',
    });
  });

  it('serves a notice, not an error page, for a room that does not exist', async () => {
    await app();
    const page = await t!.app.inject({ method: 'GET', url: '/rooms/nope' });
    expect(page.statusCode).toBe(404);
    expect(page.body).toContain('This room does not exist or has ended.');
  });
});

describe('the OpenAPI document', () => {
  it('describes POST /bots/start', async () => {
    await app();
    const doc = (await t!.app.inject({ method: 'GET', url: '/openapi.json' })).json();
    expect(doc.paths['/bots/start'].post.requestBody).toBeDefined();
    expect(doc.components.schemas.StartBotRequest.properties).toHaveProperty('dialout_settings');
  });
});
