/**
 * Run as a child process by the crash-recovery test: records two seconds of a conversation into
 * the data dir given as argv[2] (and the store of DATABASE_URL, when set), lets it reach the disk, prints `{"id","writtenMs"}` and then
 * waits to be killed (SIGKILL): a process dying mid-call, with the recording never finished.
 */
import { encodeMulaw } from '../../src/audio/mulaw.js';
import { createLogger } from '../../src/observability/logger.js';
import { BucketStorage } from '../../src/recordings/bucket-storage.js';
import { RecordingsService } from '../../src/recordings/recordings-service.js';
import { UrlSigner } from '../../src/security/url-signer.js';
import { AccountsRepo, DEFAULT_ACCOUNT_NAME } from '../../src/store/accounts-repo.js';
import { dataDirId } from '../../src/store/data-dir-id.js';
import { openDatabase } from '../../src/store/database.js';
import { RecordingsRepo } from '../../src/store/recordings-repo.js';

const dataDir = process.argv[2]!;
const database = await openDatabase(dataDir, process.env.DATABASE_URL);
const account = await new AccountsRepo(database.db).ensureAccount(DEFAULT_ACCOUNT_NAME);
const repo = new RecordingsRepo(database.db);
const service = new RecordingsService({
  repo,
  dataDir,
  nodeId: dataDirId(dataDir),
  publicUrl: 'http://localhost',
  signer: UrlSigner.forDataDir(dataDir),
  bucketStorage: new BucketStorage({}),
  log: createLogger('silent'),
});

let clockMs = 0;
const recorder = service.start({
  accountId: account.id,
  roomName: 'crash-room',
  settings: { type: 'cloud' },
  now: () => clockMs,
})!;
// Caller: a ramp, so each frame is recognisable; bot: a constant level from 1 s on.
for (let frame = 0; frame < 100; frame++) {
  clockMs = frame * 20;
  recorder.callerFrame(encodeMulaw(new Int16Array(160).fill(100 + frame * 10)));
  if (frame >= 50) recorder.botFrame(encodeMulaw(new Int16Array(160).fill(-3000)));
}
clockMs = 2000;
recorder.flush();
await recorder.settled();
// The row is written in the background; wait until it is there before "dying".
while (!(await repo.listInProgress(dataDirId(dataDir))).length) await new Promise((resolve) => setTimeout(resolve, 10));
const [row] = await repo.listInProgress(dataDirId(dataDir));
process.stdout.write(`${JSON.stringify({ id: row!.id, writtenMs: 2000 - 200 })}\n`);
setInterval(() => undefined, 60_000);
