/**
 * `switchboard loadtest` against the balancer of two nodes: the calls' webhooks and media streams
 * are spread over both, and the run reports calls, latencies and failures as it does for one.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli-process.js';
import { removeDir, sampleConfig, tempDataDir } from '../helpers/test-data.js';
import { type Cluster, clusterView, redisLookup, startCluster, until } from './cluster-harness.js';

const CALLS = 4;

describe.skipIf(!redisLookup.ok)('switchboard loadtest through the balancer of two nodes', { timeout: 120_000 }, () => {
  let cluster: Cluster;
  let out: string;
  beforeAll(async () => {
    cluster = await startCluster();
    out = tempDataDir();
  }, 60_000);
  afterAll(async () => {
    await cluster?.close();
    if (out) removeDir(out);
  });

  it('places every call through either node and reports calls, latencies and failures', async () => {
    const created = await cluster.api('POST', '/v1/bots/twilio-config', sampleConfig());
    expect(created.status).toBe(200);
    const run = await runCli(
      [
        'loadtest',
        '--url',
        `${cluster.proxy.url}/twilio/voice/${created.body.id}`,
        '--calls',
        String(CALLS),
        '--concurrency',
        String(CALLS),
        '--ramp-up-s',
        '1',
        '--quiet',
        '--out',
        out,
      ],
      {},
    );
    expect(run.stderr).toBe('');
    expect(run.code, run.stdout).toBe(0);
    expect(run.stdout).toContain(`calls: ${CALLS}, ok ${CALLS}, failed 0`);
    expect(run.stdout).toMatch(/reply latency: +p50 \d+/);

    const report = JSON.parse(readFileSync(join(out, 'report.json'), 'utf8'));
    expect(report.aggregate.calls).toMatchObject({ total: CALLS, ok: CALLS, failed: 0 });
    expect(report.aggregate.replyLatencyMs.count).toBeGreaterThanOrEqual(CALLS);
    expect(report.aggregate.violations).toBe(0);

    // Round robin spread each call's webhook and media stream over the nodes (strict alternation
    // may put every webhook on one node and every stream on the other: a stream needs nothing of
    // the node that answered its webhook).
    const streams = cluster.proxy.routed.filter((r) => r.path.startsWith('/ws/twilio/'));
    const webhooks = cluster.proxy.routed.filter((r) => r.path.startsWith('/twilio/voice/'));
    expect(streams).toHaveLength(CALLS);
    expect(webhooks).toHaveLength(CALLS);
    expect(new Set([...streams, ...webhooks].map((r) => r.index))).toEqual(new Set([0, 1]));
    // Every call has ended on both nodes (as their next heartbeats say).
    await until(async () => (await clusterView(cluster.nodes[0]!.baseUrl)).nodes.every((n) => n.live_calls === 0));
  });
});
