import { afterEach, describe, expect, it } from 'vitest';
import { startWebhookReceiver } from '../fakes/webhook-receiver.js';
import { type TestApp, createTestApp } from '../helpers/test-app.js';
import { auth, removeDir } from '../helpers/test-data.js';

let t: TestApp | undefined;
const closers: Array<() => Promise<void>> = [];

afterEach(async () => {
  for (const close of closers.splice(0)) await close();
  if (t) {
    await t.close();
    removeDir(t.dataDir);
  }
  t = undefined;
});

async function until(condition: () => boolean, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

async function buy(number: string, key?: string): Promise<void> {
  const res = await t!.app.inject({
    method: 'POST',
    url: '/v1/buy-phone-number',
    headers: auth(key),
    payload: { number },
  });
  expect(res.statusCode).toBe(200);
}

async function configure(entries: unknown[], key?: string) {
  const res = await t!.app.inject({
    method: 'POST',
    url: '/v1/',
    headers: auth(key),
    payload: { properties: { pinless_dialin: entries } },
  });
  return { status: res.statusCode, body: res.json() };
}

const SECRET = Buffer.alloc(32, 7).toString('base64');

describe('pinless dial-in configuration (POST /v1/)', () => {
  it('replaces the entries, returns sip_uri and hmac, and sends each webhook a signed test POST', async () => {
    t = await createTestApp();
    const secrets = new Map<string, string>([['+14155550100', SECRET]]);
    const receiver = await startWebhookReceiver((to) => secrets.get(to));
    closers.push(receiver.close);
    await buy('+14155550100');
    await buy('+14155550101');

    const first = await configure([
      {
        phone_number: '+14155550100',
        room_creation_api: receiver.url,
        name_prefix: 'front',
        hmac: SECRET,
        timeout_config: { message: 'Sorry, no one is free.' },
      },
      { phone_number: '+14155550101', room_creation_api: receiver.url },
    ]);
    expect(first.status).toBe(200);
    const [given, generated] = first.body.config.pinless_dialin;
    expect(given).toMatchObject({
      phone_number: '+14155550100',
      hmac: SECRET,
      name_prefix: 'front',
      sip_uri: expect.stringMatching(/^sip:dialin-.+@sip\.localhost$/),
    });
    expect(Buffer.from(generated.hmac, 'base64')).toHaveLength(32);
    expect(first.body.domain_id).toEqual(expect.any(String));

    // Both webhooks got a test POST; the one whose secret the receiver knows verifies.
    await until(() => receiver.received.length === 2);
    const test = receiver.received.find((r) => r.body.To === '+14155550100')!;
    expect(test.body).toEqual({ To: '+14155550100', test: true });
    expect(test.signatureValid).toBe(true);

    // Without hmac, a new secret on every call; the array is replaced, not merged.
    const second = await configure([{ phone_number: '+14155550101', room_creation_api: receiver.url }]);
    expect(second.body.config.pinless_dialin).toHaveLength(1);
    expect(second.body.config.pinless_dialin[0].hmac).not.toBe(generated.hmac);
    const read = await t.app.inject({ method: 'GET', url: '/v1/', headers: auth() });
    expect(read.json().config.pinless_dialin.map((e: { phone_number: string }) => e.phone_number)).toEqual([
      '+14155550101',
    ]);
  });

  it('keeps the configuration when the webhook answers with an error or is unreachable', async () => {
    t = await createTestApp();
    const failing = await startWebhookReceiver(() => undefined, 500);
    closers.push(failing.close);
    await buy('+13125550100');
    const res = await configure([
      { phone_number: '+13125550100', room_creation_api: failing.url },
      { room_creation_api: 'http://localhost:9/nothing-listens' },
    ]);
    expect(res.status).toBe(200);
    await until(() => failing.received.length === 1);
    expect(
      (await t.app.inject({ method: 'GET', url: '/v1/', headers: auth() })).json().config.pinless_dialin,
    ).toHaveLength(2);
  });

  it('refuses bad entries with the path of each problem', async () => {
    t = await createTestApp();
    const other = await t.createKey('acme');
    await buy('+12065550100', other);
    const res = await configure([
      { phone_number: '+12065550100', room_creation_api: 'http://169.254.169.254/latest/meta-data' },
      { phone_number: '+15005550006', room_creation_api: 'ftp://example.com/x', hmac: 'not base64!' },
      { room_creation_api: 'https://example.com/hook', hold_music_url: 'http://[fe80::1]/music.mp3', colour: 'blue' },
    ]);
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('invalid-request-error');
    expect(res.body.info).toContain('properties.pinless_dialin.1.hmac: must be Base-64');
    expect(res.body.info).toContain('colour');

    const addresses = await configure([
      { phone_number: '+12065550100', room_creation_api: 'http://169.254.169.254/latest/meta-data' },
      { room_creation_api: 'ftp://example.com/x' },
      { room_creation_api: 'https://example.com/hook', hold_music_url: 'http://[fe80::1]/music.mp3' },
    ]);
    expect(addresses.status).toBe(400);
    for (const fragment of [
      'properties.pinless_dialin.0.room_creation_api: points at 169.254.169.254, a link-local or metadata address',
      'properties.pinless_dialin.0.phone_number: +12065550100 is not one of your purchased numbers',
      'properties.pinless_dialin.1.room_creation_api: must be an http:// or https:// URL',
      'properties.pinless_dialin.2.hold_music_url: points at fe80::1',
    ]) {
      expect(addresses.body.info).toContain(fragment);
    }
    expect((await configure([])).status).toBe(200);
    expect(
      (await t.app.inject({ method: 'POST', url: '/v1/', headers: auth(), payload: { pinless_dialin: [] } }))
        .statusCode,
    ).toBe(400);
  });

  it('routes a number only to the account that holds it now, not to one that released it', async () => {
    t = await createTestApp();
    const first = await startWebhookReceiver(() => SECRET);
    const second = await startWebhookReceiver(() => SECRET);
    closers.push(first.close, second.close);
    const number = '+13125550140';
    await buy(number);
    expect((await configure([{ phone_number: number, room_creation_api: first.url, hmac: SECRET }])).status).toBe(200);
    const held = await t.app.inject({ method: 'GET', url: '/v1/purchased-phone-numbers', headers: auth() });
    const released = await t.app.inject({
      method: 'DELETE',
      url: `/v1/release-phone-number/${held.json().data[0].id}`,
      headers: auth(),
    });
    expect(released.statusCode).toBe(200);

    // The first account's entry is still in its configuration, but the number is someone else's now.
    const other = await t.createKey('next-owner');
    await buy(number, other);
    expect(
      (await configure([{ phone_number: number, room_creation_api: second.url, hmac: SECRET }], other)).status,
    ).toBe(200);
    const call = await t.app.inject({
      method: 'POST',
      url: '/twilio/voice',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams({ To: number, From: '+15005550006', CallSid: 'CA9' }).toString(),
    });
    expect(call.body).toContain('<Stream');
    await until(() => second.received.some((r) => r.body.callId !== undefined));
    expect(first.received.filter((r) => r.body.callId !== undefined)).toEqual([]);
  });
});
