import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../config/env.js';
import { openDatabase } from '../store/database.js';
import { loadServiceKeys, readOrCreateKeyFile } from './service-keys.js';

const dirs: string[] = [];
function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'service-keys-'));
  dirs.push(dir);
  return dir;
}
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

describe('service keys on the SQLite store', () => {
  it('live in the data dir on SQLite: created once (mode 0600), the same on every load; the environment wins', async () => {
    const dataDir = tempDir();
    const database = await openDatabase(dataDir);
    try {
      const first = await loadServiceKeys(loadConfig({ SWITCHBOARD_DATA_DIR: dataDir }), database);
      expect(
        readdirSync(dataDir)
          .filter((f) => f.endsWith('.key'))
          .sort(),
      ).toEqual(['link-signing.key', 'room-token.key', 'secret.key']);
      expect(statSync(join(dataDir, 'secret.key')).mode & 0o777).toBe(0o600);
      expect(readFileSync(join(dataDir, 'room-token.key'), 'utf8').trim()).toBe(first.roomToken.toString('base64'));
      const second = await loadServiceKeys(loadConfig({ SWITCHBOARD_DATA_DIR: dataDir }), database);
      expect(second).toEqual(first);
      expect(new Set([first.secret, first.linkSigning, first.roomToken].map((k) => k.toString('hex'))).size).toBe(3);

      const given = Buffer.alloc(32, 5).toString('base64');
      const fromEnv = await loadServiceKeys(
        loadConfig({ SWITCHBOARD_DATA_DIR: dataDir, SWITCHBOARD_SECRET_KEY: given }),
        database,
      );
      expect(fromEnv.secret.toString('base64')).toBe(given);
      expect(fromEnv.linkSigning).toEqual(first.linkSigning);
      expect(await database.db.selectFrom('service_keys').selectAll().execute()).toEqual([]);
    } finally {
      await database.close();
    }
  });

  it('refuses a key file that is not 32 bytes of base64, naming it', () => {
    const path = join(tempDir(), 'secret.key');
    writeFileSync(path, 'c2hvcnQ=\n');
    expect(() => readOrCreateKeyFile(path)).toThrow(`${path} is not a 32-byte base64 key`);
  });

  it('gives processes creating the same key file at once one key, never a partly written one', async () => {
    const path = join(tempDir(), 'link-signing.key');
    // The compiled module (dist/ is built once per run for the tests that start processes):
    // through tsx, each of the four processes would first transpile it.
    const module = new URL('../../dist/security/service-keys.js', import.meta.url).href;
    const script = `import(${JSON.stringify(module)}).then((m) => process.stdout.write(m.readOrCreateKeyFile(${JSON.stringify(path)}).toString('base64')))`;
    const outputs = await Promise.all(
      Array.from({ length: 4 }, async () => {
        const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
        let out = '';
        child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
        const [code] = (await once(child, 'exit')) as [number];
        expect(code).toBe(0);
        return out;
      }),
    );
    expect(new Set(outputs).size).toBe(1);
    expect(outputs[0]).toBe(readFileSync(path, 'utf8').trim());
    expect(readdirSync(join(path, '..'))).toEqual(['link-signing.key']);
  });
});
