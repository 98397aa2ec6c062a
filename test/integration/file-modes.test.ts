import { chmodSync, existsSync, mkdirSync, readdirSync, statSync } from 'node:fs';
import { once } from 'node:events';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { runPhoneCall } from '../../src/tools/simulator/phone-call.js';
import { ScriptedLlm, ScriptedStt, ToneTts } from '../fakes/scripted-providers.js';
import { type CallServer, startCallServer } from '../helpers/call-server.js';
import { runCli, startServeProcess } from '../helpers/cli-process.js';
import { TEST_KEY, removeDir, sampleConfig, tempDataDir } from '../helpers/test-data.js';
import { waitFor } from '../helpers/wait.js';

/**
 * The store holds every configuration and the recordings hold callers' voices: neither may be
 * readable by other users of the machine, whatever the umask. The usual umask (022) is set so the
 * files would come out world-readable if the server did not ask for less.
 */

const mode = (path: string) => statSync(path).mode & 0o777;
const octal = (path: string) => `${path}: ${mode(path).toString(8)}`;

let previousUmask: number;
beforeAll(() => {
  previousUmask = process.umask(0o022);
});
afterAll(() => {
  process.umask(previousUmask);
});

const dirs: string[] = [];
let server: CallServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
  for (const dir of dirs.splice(0)) removeDir(dir);
});

describe('file modes', () => {
  it('creates the data dir 0700 and the SQLite store, its WAL and shared memory 0600, and tightens an existing store', async () => {
    const root = tempDataDir();
    dirs.push(root);
    const dataDir = join(root, 'state', 'data');
    const serve = await startServeProcess({ SWITCHBOARD_DATA_DIR: dataDir, SWITCHBOARD_API_KEY: TEST_KEY });
    try {
      const res = await fetch(`${serve.baseUrl}/v1/bots/twilio-config`, {
        method: 'POST',
        headers: { authorization: `Bearer ${TEST_KEY}`, 'content-type': 'application/json' },
        body: JSON.stringify(sampleConfig()),
      });
      expect(res.status).toBe(200);
      const store = join(dataDir, 'switchboard.sqlite');
      for (const file of [store, `${store}-wal`, `${store}-shm`, join(dataDir, 'secret.key')]) {
        expect(existsSync(file), file).toBe(true);
        expect(octal(file)).toBe(`${file}: 600`);
      }
      for (const dir of [dataDir, join(root, 'state')]) expect(octal(dir)).toBe(`${dir}: 700`);
    } finally {
      serve.child.kill('SIGTERM');
      await once(serve.child, 'exit');
    }

    // A store an older version left world-readable is tightened when it is next opened.
    const store = join(dataDir, 'switchboard.sqlite');
    chmodSync(store, 0o644);
    const listed = await runCli(['keys', 'list'], { SWITCHBOARD_DATA_DIR: dataDir });
    expect(listed.code, listed.stderr).toBe(0);
    expect(octal(store)).toBe(`${store}: 600`);
  });

  it('writes call recordings 0600 in directories it creates 0700', async () => {
    server = await startCallServer((registry) => {
      registry
        .registerStt('scripted_stt', () => new ScriptedStt([]))
        .registerLlm('scripted_llm', () => new ScriptedLlm({ replies: ['Welcome to the Harbour Hotel.'] }))
        .registerTts('tone_tts', () => new ToneTts());
    });
    const { wssUrl } = await server.createConfig({
      services: { stt: 'scripted_stt', llm: 'scripted_llm', tts: 'tone_tts' },
      config: [{ service: 'llm', options: [{ name: 'run_on_config', value: true }] }],
      recording_settings: { type: 'cloud' },
    });
    await runPhoneCall({ target: { wssUrl }, scenario: { steps: [{ do: 'wait-bot-silence', ms: 400 }] } });
    const recordings = join(server.dataDir, 'recordings');
    const [account] = readdirSync(recordings);
    const [recording] = readdirSync(join(recordings, account!));
    const dir = join(recordings, account!, recording!);
    for (const d of [recordings, join(recordings, account!), dir]) expect(octal(d)).toBe(`${d}: 700`);
    const files = readdirSync(dir);
    expect(files.sort()).toEqual(['bot.wav', 'caller.wav', 'mixed.wav']);
    for (const file of files) expect(octal(join(dir, file))).toBe(`${join(dir, file)}: 600`);
  });

  it('writes nothing outside the data dir: the system temporary directory and the home directory stay empty through a start that loads the VAD', async () => {
    const root = tempDataDir();
    dirs.push(root);
    const tmp = join(root, 'tmp');
    const home = join(root, 'home');
    for (const dir of [tmp, home]) mkdirSync(dir);
    const serve = await startServeProcess({
      SWITCHBOARD_DATA_DIR: join(root, 'data'),
      SWITCHBOARD_API_KEY: TEST_KEY,
      TMPDIR: tmp,
      HOME: home,
    });
    try {
      // A stored configuration means calls may come: the VAD's network loads.
      const res = await fetch(`${serve.baseUrl}/v1/bots/twilio-config`, {
        method: 'POST',
        headers: { authorization: `Bearer ${TEST_KEY}`, 'content-type': 'application/json' },
        body: JSON.stringify(sampleConfig()),
      });
      expect(res.status).toBe(200);
      await waitFor(() => serve.output().includes('"msg":"voice activity model ready"') || undefined, 30_000);
    } finally {
      serve.child.kill('SIGTERM');
      await once(serve.child, 'exit');
    }
    expect(readdirSync(tmp)).toEqual([]);
    expect(readdirSync(home)).toEqual([]);
  });
});
