import type { Coordinator } from '../cluster/coordinator.js';
import type { Clock } from '../shared/clock.js';
import type { AppConfig } from '../config/env.js';
import type { Logger } from '../observability/logger.js';
import type { ServiceMetrics } from '../observability/metrics.js';
import { CallRecordsService } from '../records/call-records-service.js';
import { StatusCallbacks } from '../records/status-callback.js';
import type { AddressPolicy } from '../security/address-policy.js';
import { CallRecordsRepo } from '../store/call-records-repo.js';
import type { OpenedDatabase } from '../store/database.js';

export interface RecordsDeps {
  config: AppConfig;
  database: OpenedDatabase;
  nodeId: string;
  /** The calls' clock. */
  clock?: Clock;
  cluster: Coordinator;
  metrics: ServiceMetrics;
  webhookPolicy: AddressPolicy;
  log: Logger;
}

/**
 * The call records, ready for new calls: records a dead process of this node left in progress
 * are marked interrupted first, the node that reaps a dead one marks that node's, and old ones
 * go after the retention period. `close` waits for the records still being written (never for
 * status callbacks, whose retries it stops).
 */
export async function buildRecords(
  deps: RecordsDeps,
): Promise<{ records: CallRecordsService; close(): Promise<void> }> {
  const { config, log } = deps;
  const records = new CallRecordsService({
    clock: deps.clock,
    repo: new CallRecordsRepo(deps.database.db),
    nodeId: deps.nodeId,
    log,
    retentionDays: config.callRetentionDays,
    statusCallbacks: new StatusCallbacks({ policy: deps.webhookPolicy, log }),
    metrics: deps.metrics,
  });
  await records.recoverInterrupted();
  records.startRetention();
  deps.cluster.onNodeDead((deadNodeId) => {
    records
      .abandonNode(deadNodeId)
      .catch((err: unknown) => log.error({ err, deadNode: deadNodeId }, 'could not close a dead node’s call records'));
  });
  return {
    records,
    close: async () => {
      await records.drain();
      records.close();
    },
  };
}
