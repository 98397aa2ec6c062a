import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../config/env.js';
import { openDatabase } from '../store/database.js';
import { KeyMismatchError } from './key-fingerprint.js';
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
  it('live in the data dir on SQLite: created once (mode 0600), the same on every load; a key from the environment must be the store’s', async () => {
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
      const { secretRing: _ring, ...keys } = second;
      expect(keys).toEqual({ secret: first.secret, linkSigning: first.linkSigning, roomToken: first.roomToken });
      expect(new Set([first.secret, first.linkSigning, first.roomToken].map((k) => k.toString('hex'))).size).toBe(3);

      // The store keeps each key's fingerprint, never the key.
      const fingerprints = await database.db.selectFrom('key_fingerprints').selectAll().orderBy('name').execute();
      expect(fingerprints.map((f) => f.name)).toEqual(['link-signing', 'room-token', 'secret']);
      for (const f of fingerprints) {
        expect(f.fingerprint).toMatch(/^[0-9a-f]{64}$/);
        for (const key of [first.secret, first.linkSigning, first.roomToken]) {
          expect(f.fingerprint).not.toContain(key.toString('hex'));
          expect(f.fingerprint).not.toContain(key.toString('base64'));
        }
      }

      // The environment may give the store's key, not another one.
      const same = await loadServiceKeys(
        loadConfig({ SWITCHBOARD_DATA_DIR: dataDir, SWITCHBOARD_SECRET_KEY: first.secret.toString('base64') }),
        database,
      );
      expect(same.secret.equals(first.secret)).toBe(true);
      const other = loadServiceKeys(
        loadConfig({ SWITCHBOARD_DATA_DIR: dataDir, SWITCHBOARD_SECRET_KEY: Buffer.alloc(32, 5).toString('base64') }),
        database,
      );
      await expect(other).rejects.toThrow(KeyMismatchError);
      await expect(other).rejects.toThrow(/^SWITCHBOARD_SECRET_KEY is not the secret key this store uses/);
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
    // The source module through tsx: dist/ is a bundle, with no module of its own per file.
    const module = new URL('./service-keys.ts', import.meta.url).href;
    const script = `import(${JSON.stringify(module)}).then((m) => process.stdout.write(m.readOrCreateKeyFile(${JSON.stringify(path)}).toString('base64')))`;
    const outputs = await Promise.all(
      Array.from({ length: 4 }, async () => {
        const child = spawn(process.execPath, ['--import', 'tsx', '-e', script], {
          stdio: ['ignore', 'pipe', 'inherit'],
        });
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
