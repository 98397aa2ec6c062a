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
 * The figures are vitest's per-file times from a whole run on the 2-core CI machine (a file
 * changed since, by its old figure scaled by its own before/after times run alone). Refresh them
 * when a file's time changes much (a new long file belongs here too): `npx vitest run
 * --reporter=json --outputFile=run.json` prints them per file (endTime - startTime of each
 * testResults entry).
 */
const MEASURED_SECONDS: Record<string, number> = {
  'processes:test/integration/readme-walkthroughs.test.ts': 120,
  'postgres:test/postgres/key-fingerprints.test.ts': 63,
  'default:test/integration/room.test.ts': 62,
  'default:test/integration/phone-call.test.ts': 57,
  'default:test/integration/s2s-call.test.ts': 57,
  'cluster:test/cluster/two-nodes.test.ts': 55,
  'processes:test/integration/dist-build.test.ts': 52,
  'processes:test/integration/loadtest.test.ts': 51,
  'default:test/integration/instant-barge-in.test.ts': 49,
  'default:test/integration/dialout.test.ts': 48,
  'processes:test/integration/cli-usage.test.ts': 37,
  'default:test/integration/interruption-context.test.ts': 35,
  'processes:test/browser/pipecat-webrtc.test.ts': 35,
  'default:test/integration/function-calls.test.ts': 33,
  'processes:test/browser/pipecat-sdk.test.ts': 31,
  'default:test/integration/turn-finalize.test.ts': 27,
  'processes:test/integration/shutdown-drain.test.ts': 27,
  'cluster:test/cluster/node-failure.test.ts': 27,
  'cluster:test/cluster/loadtest.test.ts': 24,
  'default:test/integration/turn-deadline.test.ts': 23,
  'postgres:test/integration/persistence.test.ts': 23,
  'default:test/integration/call-records.test.ts': 21,
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
