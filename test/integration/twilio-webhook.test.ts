import { afterEach, describe, expect, it } from 'vitest';
import { twilioSignatureFor } from '../../src/telephony/twilio-signature.js';
import { type TestApp, createTestApp } from '../helpers/test-app.js';
import { auth, removeDir, sampleConfig } from '../helpers/test-data.js';

const PUBLIC_URL = 'https://bots.example.com';
const AUTH_TOKEN = 'twilio-auth-token-for-tests';
let t: TestApp | undefined;
afterEach(async () => {
  if (t) {
    await t.close();
    removeDir(t.dataDir);
    t = undefined;
  }
});

async function createConfig(app: TestApp): Promise<{ id: string; domain: string; wssUrl: string; twiml: string }> {
  const res = await app.app.inject({
    method: 'POST',
    url: '/v1/bots/twilio-config',
    headers: auth(),
    payload: sampleConfig(),
  });
  return res.json();
}

const form = (params: Record<string, string>) => new URLSearchParams(params).toString();
const FORM = 'application/x-www-form-urlencoded';

describe('TwiML and the voice webhook', () => {
  it('derives wss from an https public URL and passes identifiers as <Parameter>', async () => {
    t = await createTestApp({ SWITCHBOARD_PUBLIC_URL: `${PUBLIC_URL}/` });
    const view = await createConfig(t);
    expect(view.wssUrl).toBe(`wss://bots.example.com/ws/twilio/${view.id}`);
    expect(view.twiml).toBe(
      '<?xml version="1.0" encoding="UTF-8"?><Response><Connect>' +
        `<Stream url="wss://bots.example.com/ws/twilio/${view.id}">` +
        `<Parameter name="botConfigId" value="${view.id}"/>` +
        `<Parameter name="domain" value="${view.domain}"/>` +
        '</Stream></Connect></Response>',
    );
    expect(view.wssUrl).not.toContain('?');
  });

  it('serves the same TwiML as text/xml, with the caller details, when no auth token is set', async () => {
    t = await createTestApp({ SWITCHBOARD_PUBLIC_URL: PUBLIC_URL });
    const view = await createConfig(t);
    const res = await t.app.inject({
      method: 'POST',
      url: `/twilio/voice/${view.id}`,
      headers: { 'content-type': FORM },
      payload: form({ CallSid: 'CA123', From: '+15550100001', To: '+15550100002' }),
    });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toContain('text/xml');
    expect(res.body).toContain(`<Stream url="${view.wssUrl}">`);
    expect(res.body).toContain(`<Parameter name="botConfigId" value="${view.id}"/>`);
    expect(res.body).toContain('<Parameter name="from" value="+15550100001"/>');
    expect(res.body).toContain('<Parameter name="to" value="+15550100002"/>');

    const unknown = await t.app.inject({
      method: 'POST',
      url: '/twilio/voice/unknown',
      headers: { 'content-type': FORM },
      payload: '',
    });
    expect(unknown.statusCode).toBe(404);
    expect(unknown.body).toContain('<Hangup/>');
  });

  it('checks X-Twilio-Signature when TWILIO_AUTH_TOKEN is set', async () => {
    t = await createTestApp({ SWITCHBOARD_PUBLIC_URL: PUBLIC_URL, TWILIO_AUTH_TOKEN: AUTH_TOKEN });
    const view = await createConfig(t);
    const path = `/twilio/voice/${view.id}`;
    const params = { CallSid: 'CA999', From: '+15550100003', To: '+15550100004', AccountSid: 'AC1' };
    const good = twilioSignatureFor(AUTH_TOKEN, PUBLIC_URL + path, params);

    const ok = await t.app.inject({
      method: 'POST',
      url: path,
      headers: { 'content-type': FORM, 'x-twilio-signature': good },
      payload: form(params),
    });
    expect(ok.statusCode).toBe(200);
    expect(ok.body).toContain('<Connect>');

    const tampered = await t.app.inject({
      method: 'POST',
      url: path,
      headers: { 'content-type': FORM, 'x-twilio-signature': good },
      payload: form({ ...params, To: '+15550100999' }),
    });
    expect(tampered.statusCode).toBe(403);
    const wrongToken = twilioSignatureFor('another-token', PUBLIC_URL + path, params);
    const forged = await t.app.inject({
      method: 'POST',
      url: path,
      headers: { 'content-type': FORM, 'x-twilio-signature': wrongToken },
      payload: form(params),
    });
    expect(forged.statusCode).toBe(403);
    const missing = await t.app.inject({
      method: 'POST',
      url: path,
      headers: { 'content-type': FORM },
      payload: form(params),
    });
    expect(missing.statusCode).toBe(403);
    expect(missing.body).not.toContain('<Connect>');
  });
});
