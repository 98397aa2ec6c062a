import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { parseWav } from '../../src/audio/wav.js';
import { freePort } from '../helpers/call-server.js';
import { runCli, spawnCli, startServeProcess } from '../helpers/cli-process.js';
import { TEST_KEY, removeDir, sampleConfig, tempDataDir } from '../helpers/test-app.js';
import { waitFor } from '../helpers/wait.js';

/**
 * The README's offline walk-through, as processes: `switchboard emulate` stands in for the
 * vendors, `switchboard serve` points at it, and `switchboard call` phones a configuration with a
 * recorded fixture and writes what the bot said to a WAV.
 */

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
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

async function startEmulate(): Promise<string> {
  const child = spawnCli(
    ['emulate', '--port', '0', '--llm-first-token-ms', '50', '--reply', 'We have a table for two at eight.'],
    {},
  );
  children.push(child);
  let output = '';
  return new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`emulate did not start:\n${output}`)), 20_000);
    child.stdout!.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      const match = /listening on (http:\/\/\S+)/.exec(output);
      if (match?.[1]) {
        clearTimeout(timer);
        resolve(match[1]);
      }
    });
    child.once('exit', (code) => reject(new Error(`emulate exited with ${code}:\n${output}`)));
  });
}

/** `switchboard emulate` and `switchboard serve` pointed at it, on a fresh data dir. */
async function serveWithEmulators(env: Record<string, string> = {}) {
  const vendorsUrl = await startEmulate();
  const dataDir = tempDataDir();
  dirs.push(dataDir);
  // The TwiML names the public URL, so the server needs a real port, not 0.
  const port = await freePort();
  const server = await startServeProcess({
    PORT: String(port),
    SWITCHBOARD_PUBLIC_URL: `http://127.0.0.1:${port}`,
    SWITCHBOARD_DATA_DIR: dataDir,
    SWITCHBOARD_API_KEY: TEST_KEY,
    SWITCHBOARD_DEEPGRAM_URL: vendorsUrl,
    SWITCHBOARD_OPENAI_URL: vendorsUrl,
    SWITCHBOARD_CARTESIA_URL: vendorsUrl,
    ...env,
  });
  children.push(server.child);
  return { server, dataDir };
}

describe('an offline call through the CLI', () => {
  it('emulate + serve + call: the bot greets, hears the fixture, answers, and the WAV holds its voice', async () => {
    const { server, dataDir } = await serveWithEmulators();

    const created = await fetch(`${server.baseUrl}/v1/bots/twilio-config`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TEST_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify(sampleConfig()),
    });
    expect(created.status).toBe(200);
    const { id } = (await created.json()) as { id: string };

    const out = join(dataDir, 'bot.wav');
    const call = await runCli(
      [
        'call',
        '--url',
        `${server.baseUrl}/twilio/voice/${id}`,
        '--wait-greeting',
        '--play',
        'fixtures/audio/A06_birch_canoe.8k.wav',
        '--out',
        out,
        '--quiet',
      ],
      {},
    );
    expect(call.stderr).toBe('');
    expect(call.code, call.stdout).toBe(0);
    // The summary names the outcome and the latency the caller experienced.
    expect(call.stdout).toMatch(/completed/);
    expect(call.stdout).toMatch(/reply latency/i);
    // The VAD model was readied when the configuration was created, not by the first call.
    expect(server.output()).toMatch(/"loadMs":\d+,"msg":"voice activity model ready"/);

    expect(existsSync(out)).toBe(true);
    const wav = parseWav(new Uint8Array(readFileSync(out)));
    expect(wav.sampleRateHz).toBe(8000);
    // Greeting and answer: well over a second of bot audio on the call's timeline.
    let loud = 0;
    for (const sample of wav.samples) if (Math.abs(sample) > 1000) loud += 1;
    expect(loud / 8000).toBeGreaterThan(1);
  });

  it('the dial-in walk-through: a sandbox number, pinless dial-in to the example receiver, a simulated call that talks to the bot the receiver started', async () => {
    // The example's bot sends no api_keys: the server's own keys serve it, as in a deployment.
    const { server } = await serveWithEmulators({
      DEEPGRAM_API_KEY: 'dg-demo-key-0000',
      OPENAI_API_KEY: 'sk-demo-key-0000',
      CARTESIA_API_KEY: 'sk_car_demo_0000',
    });
    const api = async (path: string, body: unknown) => {
      const res = await fetch(`${server.baseUrl}${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${TEST_KEY}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      return { status: res.status, body: (await res.json()) as Record<string, any> };
    };

    const bought = await api('/v1/buy-phone-number', { number: '+14155550123' });
    expect(bought.status).toBe(200);

    // The example receiver, run exactly as its header says.
    const hmac = Buffer.alloc(32, 7).toString('base64');
    const receiverPort = await freePort();
    const receiver = spawn(process.execPath, ['--import', 'tsx', 'examples/pinless-receiver.ts'], {
      cwd: ROOT,
      env: {
        PATH: process.env.PATH ?? '',
        SWITCHBOARD_URL: server.baseUrl,
        SWITCHBOARD_API_KEY: TEST_KEY,
        PINLESS_HMAC: hmac,
        PORT: String(receiverPort),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.push(receiver);
    let receiverOutput = '';
    receiver.stdout!.on('data', (chunk: Buffer) => (receiverOutput += chunk.toString()));
    receiver.stderr!.on('data', (chunk: Buffer) => (receiverOutput += chunk.toString()));
    await waitFor(
      () => (receiverOutput.includes('pinless receiver on') ? true : undefined),
      20_000,
      'the example receiver to start',
    );

    const configured = await api('/v1/', {
      properties: {
        pinless_dialin: [
          { phone_number: '+14155550123', room_creation_api: `http://localhost:${receiverPort}/`, hmac },
        ],
      },
    });
    expect(configured.status).toBe(200);

    const call = await runCli(
      [
        'call',
        '--url',
        `${server.baseUrl}/twilio/voice`,
        '--to',
        '+14155550123',
        '--wait-greeting',
        '--play',
        'fixtures/audio/A06_birch_canoe.8k.wav',
      ],
      {},
    );
    expect(call.stderr).toBe('');
    expect(call.code, call.stdout).toBe(0);
    expect(call.stdout).toMatch(/completed/);
    expect(call.stdout).toMatch(/reply latency/i);
    // The receiver checked the signature and started the bot for this call.
    expect(receiverOutput).toMatch(/call from \+15555550100 to \+14155550123: bots\/start answered 200/);
    expect(server.output()).toContain('phone caller joined the room');
  });
});
