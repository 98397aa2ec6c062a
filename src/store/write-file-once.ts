import { randomBytes } from 'node:crypto';
import { chmodSync, linkSync, rmSync, writeFileSync } from 'node:fs';

/**
 * Creates `path` with `content` (mode 0600) unless it exists. The content is written in full to
 * a private temporary file and hard-linked into place, which fails if the file exists: of
 * processes doing this at once, one wins, and no one ever reads a half-written file.
 */
export function writeFileOnce(path: string, content: string): void {
  const temporary = `${path}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`;
  writeFileSync(temporary, content, { mode: 0o600, flag: 'wx' });
  try {
    chmodSync(temporary, 0o600);
    linkSync(temporary, path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  } finally {
    rmSync(temporary, { force: true });
  }
}
