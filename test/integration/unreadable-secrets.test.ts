import type { FastifyInstance } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/app.js';
import { loadConfig } from '../../src/config/env.js';
import { createLogger } from '../../src/observability/logger.js';
import { SecretBox } from '../../src/security/secret-box.js';
import { type OpenedDatabase, openDatabase } from '../../src/store/database.js';
import { TEST_KEY, auth, removeDir, sampleConfig, tempDataDir } from '../helpers/test-data.js';

/**
 * A value sealed with a secret key the server no longer holds (rotated away, or written by a node
 * given another key before fingerprints were kept): the API names the resource and the field,
 * and the log says so, instead of a bare `500 internal error`.
 */

let app: FastifyInstance | undefined;
let database: OpenedDatabase | undefined;
const dirs: string[] = [];
afterEach(async () => {
  await app?.close();
  await database?.close();
  app = undefined;
  database = undefined;
  for (const dir of dirs.splice(0)) removeDir(dir);
});

async function start(): Promise<{ logs: Array<Record<string, any>> }> {
  const dataDir = tempDataDir();
  dirs.push(dataDir);
  const config = loadConfig({ SWITCHBOARD_DATA_DIR: dataDir, SWITCHBOARD_API_KEY: TEST_KEY });
  database = await openDatabase(dataDir);
  const logs: Array<Record<string, any>> = [];
  const logger = createLogger('info', { write: (line: string) => logs.push(JSON.parse(line)) });
  app = await buildApp({ config, database, logger });
  return { logs };
}

const otherKey = new SecretBox(Buffer.alloc(32, 99));

describe('a sealed value this server cannot open', () => {
  it('answers an error naming the configuration and its field, logs it, and is mended by sending the keys again', async () => {
    const { logs } = await start();
    const created = await app!.inject({
      method: 'POST',
      url: '/v1/bots/twilio-config',
      headers: auth(),
      payload: sampleConfig(),
    });
    expect(created.statusCode).toBe(200);
    const id = created.json().id as string;
    await database!.db
      .updateTable('bot_configs')
      .set({ api_keys_sealed: otherKey.seal(JSON.stringify({ openai: 'sk-sealed-elsewhere-0000' })) })
      .where('id', '=', id)
      .execute();

    const read = await app!.inject({ method: 'GET', url: `/v1/bots/twilio-config/${id}`, headers: auth() });
    expect(read.statusCode).toBe(500);
    expect(read.json()).toEqual({
      error: 'server-error',
      info: expect.stringMatching(
        new RegExp(
          `^configuration ${id}: botConfig\\.api_keys cannot be opened: they were sealed with a secret key this server does not hold \\(SWITCHBOARD_SECRET_KEY\\)`,
        ),
      ),
    });
    const failed = logs.find((l) => l.msg === 'request failed');
    expect(failed?.err?.message).toContain(`configuration ${id}: botConfig.api_keys cannot be opened`);

    // The list names it too, rather than a bare error for the whole page.
    const listed = await app!.inject({ method: 'GET', url: '/v1/bots/twilio-config', headers: auth() });
    expect(listed.statusCode).toBe(500);
    expect(listed.json().info).toContain(`configuration ${id}: botConfig.api_keys cannot be opened`);

    // A masked key means "keep the stored one", which cannot be read: refused, naming it.
    const masked = await app!.inject({
      method: 'POST',
      url: `/v1/bots/twilio-config/${id}`,
      headers: auth(),
      payload: { ...sampleConfig(), api_keys: { openai: '****6789', deepgram: '****efgh', cartesia: '****6789' } },
    });
    expect(masked.statusCode).toBe(500);
    expect(masked.json().info).toContain(`configuration ${id}: botConfig.api_keys`);
    // Every key sent in full replaces what cannot be opened.
    const mended = await app!.inject({
      method: 'POST',
      url: `/v1/bots/twilio-config/${id}`,
      headers: auth(),
      payload: sampleConfig(),
    });
    expect(mended.statusCode).toBe(200);
    expect(
      (await app!.inject({ method: 'GET', url: `/v1/bots/twilio-config/${id}`, headers: auth() })).json().botConfig
        .api_keys.openai,
    ).toBe('****6789');
  });

  it('names the domain and its pinless dial-in entries, and the call path logs why it does not route to them', async () => {
    const { logs } = await start();
    const set = await app!.inject({
      method: 'POST',
      url: '/v1/',
      headers: auth(),
      payload: { properties: { pinless_dialin: [{ room_creation_api: 'https://hooks.example.com/dialin' }] } },
    });
    expect(set.statusCode).toBe(200);
    const { domain_id: domainId, config } = set.json();
    const sipUri = config.pinless_dialin[0].sip_uri as string;
    await database!.db
      .updateTable('dialin_configs')
      .set({ entries_sealed: otherKey.seal('[]') })
      .execute();

    const read = await app!.inject({ method: 'GET', url: '/v1/', headers: auth() });
    expect(read.statusCode).toBe(500);
    expect(read.json().info).toMatch(
      new RegExp(`^domain ${domainId}: config\\.pinless_dialin cannot be opened: .*SWITCHBOARD_SECRET_KEY`),
    );

    // A SIP call to the entry: not routed, and the log says why.
    const call = await app!.inject({
      method: 'POST',
      url: '/twilio/voice',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams({ CallSid: 'CA1', From: '+14155550100', To: sipUri }).toString(),
    });
    expect(call.statusCode).toBe(200);
    expect(call.body).toContain('This number is not connected to an assistant.');
    expect(logs.find((l) => l.msg.startsWith('pinless dial-in entries cannot be opened'))).toMatchObject({
      level: 50,
      accountId: expect.any(String),
    });
  });
});
