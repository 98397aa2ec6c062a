import { once } from 'node:events';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/env.js';
import { createLogger } from '../../src/observability/logger.js';
import { startServer } from '../../src/server.js';
import { startServeProcess } from '../helpers/cli-process.js';
import { TEST_KEY, removeDir, sampleConfig, tempDataDir } from '../helpers/test-data.js';
import { TEST_STORE, testStoreEnv } from '../helpers/test-store.js';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) removeDir(dir);
});

const headers = { authorization: `Bearer ${TEST_KEY}`, 'content-type': 'application/json' };

describe('persistence', () => {
  it('keeps configurations across a restart of a listening server on the same data dir', async () => {
    const dataDir = tempDataDir();
    dirs.push(dataDir);
    const env = {
      SWITCHBOARD_DATA_DIR: dataDir,
      SWITCHBOARD_API_KEY: TEST_KEY,
      PORT: '0',
      HOST: '127.0.0.1',
      ...(await testStoreEnv(dataDir)),
    };
    const first = await startServer(loadConfig(env), { logger: createLogger('silent') });
    const created = await fetch(`${first.address}/v1/bots/twilio-config`, {
      method: 'POST',
      headers,
      body: JSON.stringify(sampleConfig()),
    });
    expect(created.status).toBe(200);
    const view = (await created.json()) as { id: string };
    await first.close();

    const second = await startServer(loadConfig(env), { logger: createLogger('silent') });
    try {
      const read = await fetch(`${second.address}/v1/bots/twilio-config/${view.id}`, { headers });
      expect(read.status).toBe(200);
      expect(await read.json()).toEqual(view);
    } finally {
      await second.close();
    }
  });

  it('keeps configurations acknowledged with 200 when the process is killed with SIGKILL right after', async () => {
    const dataDir = tempDataDir();
    dirs.push(dataDir);
    const env = { SWITCHBOARD_DATA_DIR: dataDir, SWITCHBOARD_API_KEY: TEST_KEY, ...(await testStoreEnv(dataDir)) };
    const first = await startServeProcess(env);
    const created = await Promise.all(
      Array.from({ length: 5 }, (_, i) =>
        fetch(`${first.baseUrl}/v1/bots/twilio-config`, {
          method: 'POST',
          headers,
          body: JSON.stringify(sampleConfig({ max_duration: 100 + i })),
        }),
      ),
    );
    first.child.kill('SIGKILL');
    expect(first.output()).toContain(`"store":"${TEST_STORE}"`);
    expect(created.map((res) => res.status)).toEqual([200, 200, 200, 200, 200]);
    const views = (await Promise.all(created.map((res) => res.json()))) as Array<{ id: string }>;
    await once(first.child, 'exit');

    const second = await startServeProcess(env);
    try {
      for (const view of views) {
        const read = await fetch(`${second.baseUrl}/v1/bots/twilio-config/${view.id}`, { headers });
        expect(read.status).toBe(200);
        expect(await read.json()).toEqual(view);
      }
    } finally {
      second.child.kill('SIGTERM');
      await once(second.child, 'exit');
    }
  });

  it('generates a key on first start when none is configured, prints it once, and accepts it', async () => {
    const dataDir = tempDataDir();
    dirs.push(dataDir);
    const env = { SWITCHBOARD_DATA_DIR: dataDir, ...(await testStoreEnv(dataDir)) };
    const first = await startServeProcess(env);
    const key = /\b(sb_[A-Za-z0-9_-]{20,})\b/.exec(first.output())?.[1];
    expect(key).toBeDefined();
    const list = await fetch(`${first.baseUrl}/v1/bots/twilio-config`, { headers: { authorization: `Bearer ${key}` } });
    expect(list.status).toBe(200);
    first.child.kill('SIGTERM');
    await once(first.child, 'exit');

    const second = await startServeProcess(env);
    try {
      expect(second.output()).not.toContain(key!);
      expect(/\bsb_[A-Za-z0-9_-]{20,}\b/.test(second.output())).toBe(false);
      const again = await fetch(`${second.baseUrl}/v1/bots/twilio-config`, {
        headers: { authorization: `Bearer ${key}` },
      });
      expect(again.status).toBe(200);
    } finally {
      second.child.kill('SIGTERM');
      await once(second.child, 'exit');
    }
  });
});
