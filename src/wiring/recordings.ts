import type { Coordinator } from '../cluster/coordinator.js';
import type { Clock } from '../shared/clock.js';
import type { AppConfig } from '../config/env.js';
import type { Logger } from '../observability/logger.js';
import { BucketStorage } from '../recordings/bucket-storage.js';
import { RecordingsService } from '../recordings/recordings-service.js';
import type { ServiceKeys } from '../security/service-keys.js';
import { UrlSigner } from '../security/url-signer.js';
import type { OpenedDatabase } from '../store/database.js';
import { RecordingsRepo } from '../store/recordings-repo.js';
import { CallRecordsRepo } from '../store/call-records-repo.js';

export interface RecordingsDeps {
  config: AppConfig;
  database: OpenedDatabase;
  nodeId: string;
  /** The calls' clock. */
  clock?: Clock;
  keys: ServiceKeys;
  cluster: Coordinator;
  log: Logger;
}

/**
 * The recordings service, ready for new calls: recordings a dead process left in progress are
 * finalised first, and the node that reaps a dead one closes the recordings it left in progress.
 * `close` waits for the recordings still being written, then lets go of the bucket's connections.
 */
export async function buildRecordings(
  deps: RecordingsDeps,
): Promise<{ recordings: RecordingsService; close(): Promise<void> }> {
  const { config, log } = deps;
  const bucketStorage = new BucketStorage(config.env);
  const recordings = new RecordingsService({
    clock: deps.clock,
    repo: new RecordingsRepo(deps.database.db),
    callRecords: new CallRecordsRepo(deps.database.db),
    dataDir: config.dataDir,
    nodeId: deps.nodeId,
    publicUrl: config.publicUrl,
    signer: new UrlSigner(deps.keys.linkSigning),
    bucketStorage,
    log,
  });
  await recordings.recoverInterrupted();
  deps.cluster.onNodeDead((deadNodeId) => {
    recordings
      .abandonNode(deadNodeId)
      .catch((err: unknown) => log.error({ err, deadNode: deadNodeId }, 'could not close a dead node’s recordings'));
  });
  return {
    recordings,
    close: async () => {
      await recordings.drain();
      bucketStorage.close();
    },
  };
}
