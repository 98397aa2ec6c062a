import { afterEach, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli-process.js';
import { createTestApp } from '../helpers/test-app.js';
import { auth, removeDir, tempDataDir } from '../helpers/test-data.js';
import { testStoreEnv } from '../helpers/test-store.js';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) removeDir(dir);
});

describe('switchboard keys', () => {
  it('creates, lists and revokes stored keys, and a revoked key stops working', async () => {
    const dataDir = tempDataDir();
    dirs.push(dataDir);
    const env = { SWITCHBOARD_DATA_DIR: dataDir, ...(await testStoreEnv(dataDir)) };

    const created = await runCli(['keys', 'create', '--account', 'acme', '--name', 'ci'], env);
    expect(created.code).toBe(0);
    const key = /\n(sb_\S+)\n/.exec(created.stdout)?.[1];
    const id = /created key ([0-9a-f-]{36})/.exec(created.stdout)?.[1];
    expect(key).toBeDefined();
    expect(id).toBeDefined();

    const listed = await runCli(['keys', 'list'], env);
    expect(listed.code).toBe(0);
    expect(listed.stdout).toContain(id!);
    expect(listed.stdout).toContain('account=acme');
    expect(listed.stdout).toContain('active');
    expect(listed.stdout).not.toContain(key!);

    const t = await createTestApp({}, dataDir);
    try {
      expect(
        (await t.app.inject({ method: 'GET', url: '/v1/bots/twilio-config', headers: auth(key) })).statusCode,
      ).toBe(200);
      const revoked = await runCli(['keys', 'revoke', id!], env);
      expect(revoked.code).toBe(0);
      const after = await t.app.inject({ method: 'GET', url: '/v1/bots/twilio-config', headers: auth(key) });
      expect(after.statusCode).toBe(401);
    } finally {
      await t.close();
    }
    const again = await runCli(['keys', 'revoke', id!], env);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain('no active key');
  });

  it('stops with a message naming a bad environment variable', async () => {
    const bad = await runCli(['serve'], { PORT: 'eighty', SWITCHBOARD_PUBLIC_URL: 'ftp://x' });
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain('PORT');
    expect(bad.stderr).toContain('SWITCHBOARD_PUBLIC_URL');
  });
});
