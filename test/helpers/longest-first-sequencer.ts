import { relative } from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * Starts each group's longest test files first, so the run never ends on one long file alone on
 * one worker while the others idle. Vitest's own order needs its results cache, which a fresh
 * clone (CI) does not have: it then starts the largest files first, and file size says little
 * here (the README walk-through, one of the shortest files, runs for two minutes). So the files
 * known to be long carry their measured seconds below; any other file keeps vitest's order after
 * them in vitest's own order.
 *
 * The figures are vitest's per-file times from a whole `npm test` on the 2-core CI machine (the
 * call group twelve files at once, the process group six; a file split or shortened since, by
 * its share of the old figure). Refresh them
 * when a file's time changes much (a new long file belongs here too): `npx vitest run
 * --reporter=json --outputFile=run.json` prints them per file (endTime - startTime of each
 * testResults entry).
 */
const MEASURED_SECONDS: Record<string, number> = {
  'default:test/integration/s2s-call.test.ts': 57,
  'default:test/integration/room.test.ts': 71,
  'processes:test/integration/readme-walkthroughs.test.ts': 66,
  'cluster:test/cluster/two-nodes.test.ts': 62,
  'processes-without-calls:test/integration/dist-build.test.ts': 61,
  'default:test/integration/instant-barge-in.test.ts': 61,
  'default:test/integration/phone-call.test.ts': 59,
  'processes:test/integration/loadtest.test.ts': 52,
  'postgres:test/postgres/key-fingerprints.test.ts': 50,
  'processes:test/browser/pipecat-webrtc.test.ts': 47,
  'processes:test/integration/readme-dial-walkthroughs.test.ts': 44,
  'default:test/integration/function-calls.test.ts': 37,
  'default:test/integration/interruption-context.test.ts': 36,
  'processes:test/integration/shutdown-drain.test.ts': 34,
  'cluster:test/cluster/node-failure.test.ts': 33,
  'default:test/integration/turn-finalize.test.ts': 30,
  'cluster:test/cluster/pipecat-webrtc-cluster.test.ts': 29,
  'processes:test/browser/pipecat-sdk.test.ts': 27,
  'default:test/integration/turn-deadline.test.ts': 26,
  'cluster:test/cluster/loadtest.test.ts': 24,
  'default:test/integration/dialout.test.ts': 23,
  'default:test/integration/call-records.test.ts': 22,
  'default:test/integration/s2s-function-calls.test.ts': 24,
  'processes-without-calls:test/integration/cli-usage.test.ts': 22,
  'processes:test/browser/room-page.test.ts': 22,
  'default:test/integration/pipecat-room.test.ts': 20,
  'default:src/lifecycle/quiet-memory.test.ts': 19,
  'processes-without-calls:test/integration/cli-db.test.ts': 19,
};

export default class LongestFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const vitestOrder = await super.sort(files);
    const seconds = (spec: TestSpecification) =>
      MEASURED_SECONDS[`${spec.project.name}:${relative(this.ctx.config.root, spec.moduleId)}`];
    const known = vitestOrder.filter((spec) => seconds(spec) !== undefined);
    known.sort((a, b) => seconds(b)! - seconds(a)!);
    return [...known, ...vitestOrder.filter((spec) => seconds(spec) === undefined)];
  }
}
