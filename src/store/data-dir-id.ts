import { randomUUID } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { writeFileOnce } from './write-file-once.js';

/**
 * A data dir's own id (`node.id`, made on first use). Nodes sharing a PostgreSQL store each have
 * a data dir with their recordings' files; rows carry this id, so a node starting up recovers
 * only the recordings whose files it holds and never touches another node's live ones.
 */
export function dataDirId(dataDir: string): string {
  const path = join(dataDir, 'node.id');
  if (!existsSync(path)) writeFileOnce(path, `${randomUUID()}\n`);
  return readFileSync(path, 'utf8').trim();
}
