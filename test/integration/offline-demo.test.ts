import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { parseWav } from '../../src/audio/wav.js';
import { freePort } from '../helpers/call-server.js';
import { runCli, spawnCli, startServeProcess } from '../helpers/cli-process.js';
import { TEST_KEY, removeDir, sampleConfig, tempDataDir } from '../helpers/test-app.js';

/**
 * The README's offline walk-through, as processes: `switchboard emulate` stands in for the
 * vendors, `switchboard serve` points at it, and `switchboard call` phones a configuration with a
 * recorded fixture and writes what the bot said to a WAV.
 */

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
  const child = spawnCli(['emulate', '--port', '0', '--llm-first-token-ms', '50', '--reply', 'We have a table for two at eight.'], {});
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

describe('an offline call through the CLI', () => {
  it('emulate + serve + call: the bot greets, hears the fixture, answers, and the WAV holds its voice', async () => {
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
    });
    children.push(server.child);

    const created = await fetch(`${server.baseUrl}/v1/bots/twilio-config`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TEST_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify(sampleConfig()),
    });
    expect(created.status).toBe(200);
    const { id } = (await created.json()) as { id: string };

    const out = join(dataDir, 'bot.wav');
    const call = await runCli(
      ['call', '--url', `${server.baseUrl}/twilio/voice/${id}`, '--wait-greeting', '--play', 'fixtures/audio/A06_birch_canoe.8k.wav', '--out', out, '--quiet'],
      {},
    );
    expect(call.stderr).toBe('');
    expect(call.code, call.stdout).toBe(0);
    // The summary names the outcome and the latency the caller experienced.
    expect(call.stdout).toMatch(/completed/);
    expect(call.stdout).toMatch(/reply latency/i);

    expect(existsSync(out)).toBe(true);
    const wav = parseWav(new Uint8Array(readFileSync(out)));
    expect(wav.sampleRateHz).toBe(8000);
    // Greeting and answer: well over a second of bot audio on the call's timeline.
    let loud = 0;
    for (const sample of wav.samples) if (Math.abs(sample) > 1000) loud += 1;
    expect(loud / 8000).toBeGreaterThan(1);
  });
});
