import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { afterEach, describe, expect, it } from 'vitest';
import { PhoneCall } from '../../src/tools/simulator/phone-call.js';
import { freePort } from '../helpers/free-port.js';
import { spawnCli, startServeProcess, stopProcesses, untilOutput } from '../helpers/cli-process.js';
import { TEST_KEY, removeDir, sampleConfig, tempDataDir } from '../helpers/test-data.js';
import { testStoreEnv } from '../helpers/test-store.js';

/**
 * `kill -9` of the server mid-call, as processes (the built CLI, the vendor emulators): the call's
 * record is in the store from its start, and the server, started again on its data dir, marks it
 * interrupted before it takes new calls. On SQLite and on PostgreSQL.
 */

const children: ChildProcess[] = [];
const dirs: string[] = [];

afterEach(async () => {
  await stopProcesses(children);
  for (const dir of dirs.splice(0)) removeDir(dir);
});

async function startEmulate(): Promise<string> {
  const child = spawnCli(['emulate', '--port', '0', '--reply', 'We have a table for two at eight.'], {});
  children.push(child);
  return (await untilOutput(child, /listening on (http:\/\/\S+)/))[1]!;
}

async function api(baseUrl: string, method: string, path: string, body?: unknown) {
  const res = await fetch(`${baseUrl}${path}`, {
    method,
    headers: { authorization: `Bearer ${TEST_KEY}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  return { status: res.status, body: (await res.json()) as any };
}

async function until(check: () => Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe('the record of a call whose server dies', () => {
  it('is left in progress by kill -9, and marked interrupted by the server started again on its data dir', async () => {
    const vendorsUrl = await startEmulate();
    const dataDir = tempDataDir();
    dirs.push(dataDir);
    const port = await freePort();
    const env = {
      PORT: String(port),
      SWITCHBOARD_PUBLIC_URL: `http://127.0.0.1:${port}`,
      SWITCHBOARD_DATA_DIR: dataDir,
      SWITCHBOARD_API_KEY: TEST_KEY,
      SWITCHBOARD_DEEPGRAM_URL: vendorsUrl,
      SWITCHBOARD_OPENAI_URL: vendorsUrl,
      SWITCHBOARD_CARTESIA_URL: vendorsUrl,
      ...(await testStoreEnv(dataDir)),
    };
    const first = await startServeProcess(env);
    children.push(first.child);
    const created = await api(first.baseUrl, 'POST', '/v1/bots/twilio-config', sampleConfig());
    expect(created.status).toBe(200);

    let greeted!: () => void;
    const greeting = new Promise<void>((resolve) => (greeted = resolve));
    const phone = new PhoneCall({
      target: { webhookUrl: `${first.baseUrl}/twilio/voice/${created.body.id}` },
      from: '+15550100123',
      scenario: { steps: [], endOfScript: 'stay', maxDurationMs: 60_000 },
      onEvent: (e) => e.kind === 'bot-audio-start' && greeted(),
    });
    const report = phone.run();
    await greeting;
    // The record is there while the call goes on.
    const live = await api(first.baseUrl, 'GET', '/v1/calls?status=in-progress');
    expect(live.body.data).toHaveLength(1);
    expect(live.body.data[0]).toMatchObject({ status: 'in-progress', from: '+15550100123', outcome: null });

    first.child.kill('SIGKILL');
    await once(first.child, 'exit');
    const cutOff = await report;
    expect(cutOff.outcome).toBe('server-closed');

    const second = await startServeProcess(env);
    children.push(second.child);
    let record: Record<string, unknown> | undefined;
    await until(async () => {
      record = (await api(second.baseUrl, 'GET', '/v1/calls')).body.data[0];
      return record?.status === 'interrupted';
    }, 'the record marked interrupted');
    expect(record).toMatchObject({
      id: live.body.data[0].id,
      status: 'interrupted',
      outcome: 'interrupted',
      call_sid: cutOff.callSid,
      from: '+15550100123',
      bot_config_id: created.body.id,
    });
    expect(String(record!.end_reason)).toMatch(/stopped/);
    expect(record!.ended_at).not.toBeNull();
    // No transcript was written: the process died before the call's end.
    expect((await api(second.baseUrl, 'GET', `/v1/calls/${record!.id}/transcript`)).status).toBe(404);
  });
});
