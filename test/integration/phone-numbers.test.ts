import { afterEach, describe, expect, it } from 'vitest';
import { startFakeTwilioRest } from '../fakes/fake-twilio-rest.js';
import { type TestApp, createTestApp } from '../helpers/test-app.js';
import { auth, removeDir } from '../helpers/test-data.js';

let t: TestApp | undefined;

afterEach(async () => {
  if (t) {
    await t.close();
    removeDir(t.dataDir);
  }
  t = undefined;
});

async function get(path: string, key?: string) {
  const res = await t!.app.inject({ method: 'GET', url: path, headers: auth(key) });
  return { status: res.statusCode, body: res.json() };
}

async function buy(payload?: Record<string, unknown>, key?: string) {
  const res = await t!.app.inject({
    method: 'POST',
    url: '/v1/buy-phone-number',
    headers: auth(key),
    ...(payload ? { payload } : {}),
  });
  return { status: res.statusCode, body: res.json() };
}

describe('phone numbers on the sandbox carrier', () => {
  it('searches the inventory with every filter and explains bad filters', async () => {
    t = await createTestApp();
    const ca = await get('/v1/list-available-numbers?region=CA&limit=100');
    expect(ca.status).toBe(200);
    expect(ca.body.total_count).toBe(100);
    expect(ca.body.data[0]).toEqual({ number: '+14155550100', region: 'CA', city: 'San Francisco' });
    expect(ca.body.data.every((n: { region: string }) => n.region === 'CA')).toBe(true);

    const la = await get('/v1/list-available-numbers?region=ca&city=los%20angeles&limit=3');
    expect(la.body.data.map((n: { number: string }) => n.number)).toEqual([
      '+12135550100',
      '+12135550101',
      '+12135550102',
    ]);
    expect((await get('/v1/list-available-numbers?areacode=312&ends_with=0142')).body.data).toEqual([
      { number: '+13125550142', region: 'IL', city: 'Chicago' },
    ]);
    expect((await get('/v1/list-available-numbers?starts_with=617555')).body.total_count).toBe(50);
    expect((await get('/v1/list-available-numbers?contains=9999')).body).toEqual({ total_count: 0, data: [] });

    for (const [query, message] of [
      ['city=Boston', 'city: city needs region'],
      ['contains=123&ends_with=456', 'give at most one of contains, starts_with, ends_with'],
      ['areacode=41', 'areacode: must be 3–3 digits'],
      ['region=California', 'region: must be a two-letter region code'],
      ['limit=0', 'limit'],
      ['colour=blue', 'colour'],
    ] as const) {
      const res = await get(`/v1/list-available-numbers?${query}`);
      expect(res.status, query).toBe(400);
      expect(res.body.error).toBe('invalid-request-error');
      expect(res.body.info, query).toContain(message);
    }
  });

  it('buys a chosen or a random number, lists them newest first with cursors, and releases', async () => {
    t = await createTestApp();
    const chosen = await buy({ number: '+14155550142', name: 'front desk' });
    expect(chosen.status).toBe(200);
    expect(chosen.body).toEqual({ id: expect.any(String), number: '+14155550142' });
    const random = await buy();
    expect(random.status).toBe(200);
    expect(random.body.number).toMatch(/^\+1\d{3}55501\d{2}$/);
    const third = await buy({ number: '+12065550101' });

    // A held number is no longer offered.
    const search = await get('/v1/list-available-numbers?areacode=415&ends_with=0142');
    expect(search.body.total_count).toBe(0);

    const all = await get('/v1/purchased-phone-numbers');
    expect(all.body.total_count).toBe(3);
    expect(all.body.data.map((n: { id: string }) => n.id)).toEqual([third.body.id, random.body.id, chosen.body.id]);
    expect(all.body.data[2]).toEqual({
      id: chosen.body.id,
      name: 'front desk',
      type: 'purchased_phone_number',
      pagination_id: chosen.body.id,
      created_date: expect.stringMatching(/^[A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} \+0000$/),
      number: '+14155550142',
      region: 'CA',
      status: 'verified',
      verified: true,
    });
    const page2 = await get(`/v1/purchased-phone-numbers?limit=2&starting_after=${random.body.id}`);
    expect(page2.body.data.map((n: { id: string }) => n.id)).toEqual([chosen.body.id]);
    expect(page2.body.total_count).toBe(3);
    const back = await get(`/v1/purchased-phone-numbers?limit=1&ending_before=${chosen.body.id}`);
    expect(back.body.data.map((n: { id: string }) => n.id)).toEqual([random.body.id]);
    expect((await get('/v1/purchased-phone-numbers?filter_name=front%20desk')).body.total_count).toBe(1);
    expect((await get('/v1/purchased-phone-numbers?starting_after=nope')).body).toEqual({
      error: 'invalid-request-error',
      info: 'starting_after: no purchased number with id nope',
    });

    const released = await t.app.inject({
      method: 'DELETE',
      url: `/v1/release-phone-number/${chosen.body.id}`,
      headers: auth(),
    });
    expect(released.statusCode).toBe(200);
    expect(released.json()).toEqual({ id: chosen.body.id, number: '+14155550142', released: true });
    expect((await get('/v1/purchased-phone-numbers')).body.total_count).toBe(2);
    // Released, it can be bought again.
    expect((await buy({ number: '+14155550142' })).status).toBe(200);
  });

  it('refuses numbers that do not exist or are held, and keeps accounts apart', async () => {
    t = await createTestApp();
    const other = await t.createKey('acme');
    const mine = await buy({ number: '+13055550100' });
    expect(mine.status).toBe(200);

    expect(await buy({ number: '+13055550100' }, other)).toEqual({
      status: 409,
      body: { error: 'conflict-error', info: '+13055550100 is held by another account' },
    });
    expect((await buy({ number: '+13055550100' })).body.info).toContain('is already yours');
    const missing = await buy({ number: '+14155551234' });
    expect(missing.status).toBe(404);
    expect(missing.body.info).toContain('not a number the sandbox carrier has');
    expect((await buy({ number: '555-0100' })).body.info).toContain('number: must be an E.164 phone number');
    expect((await buy({ number: '+14155550100', colour: 'blue' })).status).toBe(400);

    expect((await get('/v1/purchased-phone-numbers', other)).body).toEqual({ total_count: 0, data: [] });
    const theirs = await t.app.inject({
      method: 'DELETE',
      url: `/v1/release-phone-number/${mine.body.id}`,
      headers: auth(other),
    });
    expect(theirs.statusCode).toBe(404);
    expect((await get('/v1/purchased-phone-numbers')).body.total_count).toBe(1);
  });
});

describe('phone numbers on Twilio (against a fake of its REST API)', () => {
  const SID = 'AC11111111111111111111111111111111';
  const TOKEN = 'twilio-test-token';

  it('searches, buys with the voice webhook pointed here, and releases, with the exact requests', async () => {
    const twilio = await startFakeTwilioRest(SID, TOKEN);
    try {
      t = await createTestApp({
        SWITCHBOARD_CARRIER: 'twilio',
        TWILIO_ACCOUNT_SID: SID,
        TWILIO_AUTH_TOKEN: TOKEN,
        SWITCHBOARD_TWILIO_URL: twilio.url,
        SWITCHBOARD_PUBLIC_URL: 'https://switchboard.example.com',
      });
      const search = await get('/v1/list-available-numbers?areacode=415&ends_with=0142');
      expect(search.body).toEqual({
        total_count: 1,
        data: [{ number: '+14155550142', region: 'CA', city: 'San Francisco' }],
      });
      expect(twilio.requests[0]).toMatchObject({
        method: 'GET',
        path: `/2010-04-01/Accounts/${SID}/AvailablePhoneNumbers/US/Local.json`,
        query: { AreaCode: '415', Contains: '0142', VoiceEnabled: 'true' },
        user: SID,
      });

      const bought = await buy({ number: '+14155550142' });
      expect(bought.status).toBe(200);
      expect(twilio.requests[1]).toMatchObject({
        method: 'POST',
        path: `/2010-04-01/Accounts/${SID}/IncomingPhoneNumbers.json`,
        form: {
          PhoneNumber: '+14155550142',
          VoiceUrl: 'https://switchboard.example.com/twilio/voice',
          VoiceMethod: 'POST',
        },
      });

      const released = await t.app.inject({
        method: 'DELETE',
        url: `/v1/release-phone-number/${bought.body.id}`,
        headers: auth(),
      });
      expect(released.statusCode).toBe(200);
      expect(twilio.requests[2]).toMatchObject({
        method: 'DELETE',
        path: expect.stringMatching(/\/IncomingPhoneNumbers\/PN0+1\.json$/),
      });
    } finally {
      await twilio.close();
    }
  });

  it('reports Twilio refusing as a carrier error, and a server without Twilio credentials does not start', async () => {
    const twilio = await startFakeTwilioRest(SID, 'another-token');
    try {
      t = await createTestApp({
        SWITCHBOARD_CARRIER: 'twilio',
        TWILIO_ACCOUNT_SID: SID,
        TWILIO_AUTH_TOKEN: TOKEN,
        SWITCHBOARD_TWILIO_URL: twilio.url,
      });
      const search = await get('/v1/list-available-numbers');
      expect(search.status).toBe(502);
      expect(search.body.error).toBe('carrier-error');
      expect(search.body.info).toContain('HTTP 401');
    } finally {
      await twilio.close();
    }
    await expect(createTestApp({ SWITCHBOARD_CARRIER: 'twilio' })).rejects.toThrow(
      'SWITCHBOARD_CARRIER: twilio needs TWILIO_ACCOUNT_SID and TWILIO_AUTH_TOKEN',
    );
  });
});
