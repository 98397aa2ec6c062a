/**
 * Nodes on one PostgreSQL store with the keys it uses, and only those: a node given another key
 * refuses to start (one line, exit 3) instead of answering /healthz and then failing every read;
 * `switchboard db rotate-key` changes a key on purpose while the nodes serve reads throughout.
 */
import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { afterEach, describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/store/database.js';
import { SecretBox } from '../../src/security/secret-box.js';
import { runCli, startServeProcess } from '../helpers/cli-process.js';
import { TEST_KEY, removeDir, sampleConfig, tempDataDir } from '../helpers/test-data.js';
import { createTestDatabase } from '../helpers/test-store.js';

const children: ChildProcess[] = [];
const dirs: string[] = [];
afterEach(async () => {
  for (const child of children.splice(0)) {
    if (child.exitCode !== null || child.signalCode !== null) continue;
    child.kill('SIGKILL');
    await once(child, 'exit');
  }
  for (const dir of dirs.splice(0)) removeDir(dir);
});

/** Between two rounds of reads during a rotation: far below the nodes' key refresh interval. */
const READ_PAUSE_MS = 20;

const keyOf = (byte: number) => Buffer.alloc(32, byte).toString('base64');

function dataDir(): string {
  const dir = tempDataDir();
  dirs.push(dir);
  return dir;
}

async function serve(env: Record<string, string>): Promise<{ baseUrl: string; child: ChildProcess }> {
  const node = await startServeProcess({ SWITCHBOARD_API_KEY: TEST_KEY, SWITCHBOARD_DATA_DIR: dataDir(), ...env });
  children.push(node.child);
  return node;
}

async function api(base: string, method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${TEST_KEY}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: await res.json() };
}

describe('a node whose key is not the store’s', () => {
  it('refuses to start: one line on stderr naming the variable and what to do, exit 3, never listening', async () => {
    const url = await createTestDatabase();
    const keys = {
      SWITCHBOARD_SECRET_KEY: keyOf(1),
      SWITCHBOARD_LINK_SIGNING_KEY: keyOf(2),
      SWITCHBOARD_ROOM_TOKEN_KEY: keyOf(3),
    };
    const first = await serve({ DATABASE_URL: url, ...keys });
    expect((await api(first.baseUrl, 'POST', '/v1/bots/twilio-config', sampleConfig())).status).toBe(200);

    // The stale environment file: another secret key.
    const stale = await runCli(
      ['serve'],
      {
        DATABASE_URL: url,
        SWITCHBOARD_DATA_DIR: dataDir(),
        SWITCHBOARD_API_KEY: TEST_KEY,
        PORT: '0',
        HOST: '127.0.0.1',
        ...keys,
        SWITCHBOARD_SECRET_KEY: keyOf(9),
      },
      { killAfterMs: 30_000 },
    );
    expect(stale.code, stale.stderr).toBe(3);
    expect(stale.stderr).toMatch(
      /^switchboard: SWITCHBOARD_SECRET_KEY is not the secret key this store uses \(fingerprint [0-9a-f]{12}… here, [0-9a-f]{12}… in the store\): give this node the same SWITCHBOARD_SECRET_KEY as the nodes already using this store .*switchboard db rotate-key secret\n$/,
    );
    expect(stale.stdout).not.toContain('switchboard listening');

    // The same for the signing keys, which would break recording links and room tokens across nodes.
    const staleLinks = await runCli(
      ['serve'],
      { DATABASE_URL: url, SWITCHBOARD_DATA_DIR: dataDir(), PORT: '0', ...keys, SWITCHBOARD_ROOM_TOKEN_KEY: keyOf(8) },
      { killAfterMs: 30_000 },
    );
    expect(staleLinks.code, staleLinks.stderr).toBe(3);
    expect(staleLinks.stderr.split('\n')).toEqual([
      expect.stringMatching(/^switchboard: SWITCHBOARD_ROOM_TOKEN_KEY is not the room-token key this store uses/),
      '',
    ]);

    // The key never reaches the store: only its fingerprint.
    const database = await openDatabase(dataDir(), url);
    try {
      const rows = await database.db.selectFrom('key_fingerprints').selectAll().execute();
      expect(rows).toHaveLength(3);
      const stored = JSON.stringify(rows);
      for (const key of Object.values(keys)) {
        expect(stored).not.toContain(key);
        expect(stored).not.toContain(Buffer.from(key, 'base64').toString('hex'));
      }
    } finally {
      await database.close();
    }

    // The first node never noticed: it serves as before.
    expect((await api(first.baseUrl, 'GET', '/v1/bots/twilio-config')).status).toBe(200);
  });
});

describe('switchboard db rotate-key secret', () => {
  it('re-seals every value with a new stored key while two nodes serve reads and writes of them throughout', async () => {
    const url = await createTestDatabase();
    const [a, b] = [await serve({ DATABASE_URL: url }), await serve({ DATABASE_URL: url })];
    const callback = { status_callback: { url: 'https://hooks.example.com/calls', hmac: keyOf(8) } };
    const created = await api(a.baseUrl, 'POST', '/v1/bots/twilio-config', sampleConfig(callback));
    expect(created.status).toBe(200);
    const id = created.body.id as string;
    const pinless = {
      properties: { pinless_dialin: [{ room_creation_api: 'https://hooks.example.com/dialin', hmac: keyOf(7) }] },
    };
    const configured = await api(b.baseUrl, 'POST', '/v1/', pinless);
    expect(configured.status, JSON.stringify(configured.body)).toBe(200);

    const database = await openDatabase(dataDir(), url);
    try {
      const keyRow = async () =>
        (
          await database.db
            .selectFrom('service_keys')
            .select('key_base64')
            .where('name', '=', 'secret')
            .executeTakeFirstOrThrow()
        ).key_base64;
      const oldKey = Buffer.from(await keyRow(), 'base64');

      // Reads through both nodes, a round every READ_PAUSE_MS, for as long as the rotation runs:
      // a node that cannot open a value stays so until its next key refresh (every KEY_REFRESH_MS),
      // so rounds this close find it; back to back, they only took the CPU the nodes run on.
      const failures: string[] = [];
      let reads = 0;
      let rotating = true;
      const reader = (async () => {
        while (rotating) {
          for (const node of [a, b]) {
            const config = await api(node.baseUrl, 'GET', `/v1/bots/twilio-config/${id}`);
            const domain = await api(node.baseUrl, 'GET', '/v1/');
            reads += 2;
            if (
              config.status !== 200 ||
              config.body.botConfig.api_keys.openai !== '****6789' ||
              config.body.botConfig.status_callback.hmac !== keyOf(8)
            )
              failures.push(`config via ${node.baseUrl}: ${config.status} ${JSON.stringify(config.body)}`);
            if (domain.status !== 200 || domain.body.config.pinless_dialin[0].hmac !== keyOf(7))
              failures.push(`domain via ${node.baseUrl}: ${domain.status} ${JSON.stringify(domain.body)}`);
          }
          await new Promise((resolve) => setTimeout(resolve, READ_PAUSE_MS));
        }
      })();
      const rotation = runCli(['db', 'rotate-key', 'secret'], { DATABASE_URL: url, SWITCHBOARD_DATA_DIR: dataDir() });
      let rotated: Awaited<typeof rotation>;
      try {
        // A write through one node in the middle of the rotation, read through the other.
        await new Promise((resolve) => setTimeout(resolve, 3000));
        const replaced = await api(b.baseUrl, 'POST', `/v1/bots/twilio-config/${id}`, {
          ...sampleConfig(callback),
          api_keys: { ...(sampleConfig().api_keys as object), openai: 'sk-rotated-openai-00006789' },
        });
        expect(replaced.status, JSON.stringify(replaced.body)).toBe(200);
        rotated = await rotation;
      } finally {
        rotating = false;
        await reader;
      }
      expect(rotated.code, rotated.stderr).toBe(0);
      expect(rotated.stdout).toMatch(
        /re-sealed [01] configuration\(s\), [01] configuration signing secret\(s\) and 1 dial-in configuration\(s\) with the new key/,
      );
      expect(failures).toEqual([]);
      expect(reads).toBeGreaterThan(20);

      // The store now holds only the new key, and every value is sealed with it.
      const newKey = Buffer.from(await keyRow(), 'base64');
      expect(newKey).toHaveLength(32);
      expect(newKey.equals(oldKey)).toBe(false);
      const sealed = [
        (await database.db.selectFrom('bot_configs').select('api_keys_sealed').executeTakeFirstOrThrow())
          .api_keys_sealed!,
        (await database.db.selectFrom('dialin_configs').select('entries_sealed').executeTakeFirstOrThrow())
          .entries_sealed,
        (await database.db.selectFrom('bot_configs').select('secrets_sealed').executeTakeFirstOrThrow())
          .secrets_sealed!,
      ];
      for (const value of sealed) {
        expect(() => new SecretBox(newKey).open(value)).not.toThrow();
        expect(() => new SecretBox(oldKey).open(value)).toThrow();
      }
      expect(JSON.parse(new SecretBox(newKey).open(sealed[0]!)).openai).toBe('sk-rotated-openai-00006789');

      // Both nodes go on reading and writing with the new key, without a restart.
      for (const node of [a, b]) {
        const config = await api(node.baseUrl, 'GET', `/v1/bots/twilio-config/${id}`);
        expect(config.status).toBe(200);
        expect(config.body.botConfig.api_keys.openai).toBe('****6789');
        expect((await api(node.baseUrl, 'GET', '/v1/')).status).toBe(200);
      }
      const later = await api(a.baseUrl, 'POST', '/v1/bots/twilio-config', sampleConfig());
      expect((await api(b.baseUrl, 'GET', `/v1/bots/twilio-config/${later.body.id}`)).status).toBe(200);
      // A node started now takes the new key from the store.
      const c = await serve({ DATABASE_URL: url });
      expect((await api(c.baseUrl, 'GET', `/v1/bots/twilio-config/${id}`)).status).toBe(200);
    } finally {
      await database.close();
    }
  }, 90_000);

  it('with the key in the environment: every node holds the new and the old key first; the old one alone is then refused', async () => {
    const url = await createTestDatabase();
    const [oldKey, newKey] = [keyOf(21), keyOf(22)];
    const a = await serve({ DATABASE_URL: url, SWITCHBOARD_SECRET_KEY: oldKey });
    const created = await api(a.baseUrl, 'POST', '/v1/bots/twilio-config', sampleConfig());
    expect(created.status).toBe(200);

    // Run with the current key only, the command says what to do first.
    const early = await runCli(['db', 'rotate-key', 'secret'], {
      DATABASE_URL: url,
      SWITCHBOARD_DATA_DIR: dataDir(),
      SWITCHBOARD_SECRET_KEY: oldKey,
    });
    expect(early.code).toBe(1);
    expect(early.stderr).toContain('set SWITCHBOARD_SECRET_KEY=<new key>,<current key> on every node');

    // Every node restarts with both keys (here the one node).
    a.child.kill('SIGTERM');
    await once(a.child, 'exit');
    const both = `${newKey},${oldKey}`;
    const b = await serve({ DATABASE_URL: url, SWITCHBOARD_SECRET_KEY: both });
    const rotated = await runCli(['db', 'rotate-key', 'secret'], {
      DATABASE_URL: url,
      SWITCHBOARD_DATA_DIR: dataDir(),
      SWITCHBOARD_SECRET_KEY: both,
    });
    expect(rotated.code, rotated.stderr).toBe(0);
    expect(rotated.stdout).toContain('re-sealed 1 configuration(s)');
    expect(rotated.stdout).toContain('now set SWITCHBOARD_SECRET_KEY to the new key alone on every node');
    expect((await api(b.baseUrl, 'GET', `/v1/bots/twilio-config/${created.body.id}`)).status).toBe(200);

    // The new key alone starts; the old one alone (a node not yet updated, restarted) is refused.
    const c = await serve({ DATABASE_URL: url, SWITCHBOARD_SECRET_KEY: newKey });
    expect((await api(c.baseUrl, 'GET', `/v1/bots/twilio-config/${created.body.id}`)).status).toBe(200);
    const stale = await runCli(
      ['serve'],
      { DATABASE_URL: url, SWITCHBOARD_DATA_DIR: dataDir(), PORT: '0', SWITCHBOARD_SECRET_KEY: oldKey },
      { killAfterMs: 30_000 },
    );
    expect(stale.code, stale.stderr).toBe(3);
    expect(stale.stderr).toMatch(/^switchboard: SWITCHBOARD_SECRET_KEY is not the secret key this store uses/);
  }, 90_000);
});
