import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort } from '../helpers/free-port.js';
import { runCli, spawnCli } from '../helpers/cli-process.js';
import { TEST_KEY, removeDir, sampleConfig, tempDataDir } from '../helpers/test-data.js';
import { waitFor } from '../helpers/wait.js';

/**
 * The server on a newer Node LTS: `.ci/node-lts` installs it from the npm registry and builds the
 * committed project with it (native addons included); this test starts that build's
 * `switchboard serve` under that Node and phones it with the simulator running on this Node.
 */

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const LTS_DIR = join(ROOT, '.ci/lts');
const APP = join(LTS_DIR, 'app');

function ltsNode(): { path: string; version: string } | undefined {
  const modules = join(LTS_DIR, 'node_modules');
  if (!existsSync(modules) || !existsSync(join(APP, 'dist/cli/main.js'))) return undefined;
  const pkg = readdirSync(modules).find((name) => name.startsWith('node-linux-'));
  if (!pkg) return undefined;
  const version = (JSON.parse(readFileSync(join(modules, pkg, 'package.json'), 'utf8')) as { version: string }).version;
  return { path: join(modules, pkg, 'bin/node'), version };
}

const node = ltsNode();
if (!node) console.warn('node-lts.test.ts: no Node LTS build in .ci/lts (run `bash .ci/node-lts`); skipping');

const children: ChildProcess[] = [];
const dirs: string[] = [];

afterAll(async () => {
  for (const child of children) {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL');
      await once(child, 'exit');
    }
  }
  for (const dir of dirs) removeDir(dir);
});

function collect(child: ChildProcess): () => string {
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  return () => output;
}

describe.skipIf(!node)(`the server on Node ${node?.version ?? 'LTS'}`, () => {
  it('starts, reports its Node version, and completes an offline call', { timeout: 90_000 }, async () => {
    const emulate = spawnCli(
      ['emulate', '--port', '0', '--llm-first-token-ms', '50', '--reply', 'We have a table for two at eight.'],
      {},
    );
    children.push(emulate);
    const emulateOutput = collect(emulate);
    const vendors = await waitFor(
      () => /listening on (http:\/\/\S+)/.exec(emulateOutput())?.[1],
      20_000,
      'the emulators to start',
    );

    const dataDir = tempDataDir();
    dirs.push(dataDir);
    const port = await freePort();
    const baseUrl = `http://127.0.0.1:${port}`;
    const server = spawn(node!.path, [join(APP, 'dist/cli/main.js'), 'serve'], {
      cwd: APP,
      env: {
        PATH: process.env.PATH ?? '',
        PORT: String(port),
        HOST: '127.0.0.1',
        SWITCHBOARD_PUBLIC_URL: baseUrl,
        SWITCHBOARD_DATA_DIR: dataDir,
        SWITCHBOARD_API_KEY: TEST_KEY,
        SWITCHBOARD_DEEPGRAM_URL: vendors,
        SWITCHBOARD_OPENAI_URL: vendors,
        SWITCHBOARD_CARTESIA_URL: vendors,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.push(server);
    const serverOutput = collect(server);
    await waitFor(
      () => (serverOutput().includes('"msg":"switchboard listening"') ? true : undefined),
      30_000,
      'the server to listen',
    ).catch((err: Error) => {
      throw new Error(`${err.message}:\n${serverOutput()}`);
    });

    // prom-client's default metrics name the runtime that serves them.
    const metrics = await (await fetch(`${baseUrl}/metrics`)).text();
    expect(metrics).toContain(`nodejs_version_info{version="v${node!.version}"`);

    const created = await fetch(`${baseUrl}/v1/bots/twilio-config`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TEST_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify(sampleConfig()),
    });
    expect(created.status).toBe(200);
    const { id } = (await created.json()) as { id: string };

    const call = await runCli(
      [
        'call',
        '--url',
        `${baseUrl}/twilio/voice/${id}`,
        '--wait-greeting',
        '--play',
        'fixtures/audio/A06_birch_canoe.8k.wav',
        '--quiet',
      ],
      {},
    );
    const context = `${call.stdout}\n${call.stderr}\n--- server on Node ${node!.version}:\n${serverOutput()}`;
    expect(call.code, context).toBe(0);
    expect(call.stdout, context).toMatch(/completed/);
    // The bot greeted, heard the fixture and answered it.
    expect(call.stdout, context).toMatch(/reply latency: \d+ ms/);

    // A clean shutdown on that Node too: no native abort while the store closes and the process exits.
    server.kill('SIGTERM');
    const [code, signal] = (await once(server, 'exit')) as [number | null, string | null];
    expect({ code, signal }, serverOutput()).toEqual({ code: 0, signal: null });
    expect(serverOutput()).not.toMatch(/Assertion failed/);
  });
});
