// Preloaded into the server by bench/memory.ts (`node --import`): on SIGUSR2 it writes what the
// process's memory holds, as V8 and Node see it, to $MEMORY_PROBE_OUT. Not part of the product.
import { writeFileSync, readFileSync, readdirSync } from 'node:fs';
import { PerformanceObserver, constants } from 'node:perf_hooks';
import { getHeapSpaceStatistics, getHeapStatistics, writeHeapSnapshot } from 'node:v8';

const out = process.env.MEMORY_PROBE_OUT;

function countBy(names) {
  const counts = {};
  for (const name of names) counts[name] = (counts[name] ?? 0) + 1;
  return counts;
}
let n = 0;
// Full collections (and how long each held the event loop) since the last report.
let fullGcMs = [];
let scavenges = 0;
new PerformanceObserver((list) => {
  for (const entry of list.getEntries())
    if (entry.detail?.kind === constants.NODE_PERFORMANCE_GC_MAJOR) fullGcMs.push(Math.round(entry.duration * 10) / 10);
    else if (entry.detail?.kind === constants.NODE_PERFORMANCE_GC_MINOR) scavenges += 1;
}).observe({ entryTypes: ['gc'] });
process.on('SIGUSR2', () => {
  n += 1;
  if (process.env.MEMORY_PROBE_GC === '1' && globalThis.gc) globalThis.gc();
  const threads = readdirSync('/proc/self/task').map((t) => {
    try {
      return readFileSync(`/proc/self/task/${t}/comm`, 'utf8').trim();
    } catch {
      return '?';
    }
  });
  const report = {
    n,
    memoryUsage: process.memoryUsage(),
    heap: getHeapStatistics(),
    spaces: getHeapSpaceStatistics(),
    threads,
    builtins: process.moduleLoadList.length,
    handles: countBy(process.getActiveResourcesInfo()),
    fullGcMs,
    scavenges,
  };
  fullGcMs = [];
  scavenges = 0;
  if (process.env.MEMORY_PROBE_SNAPSHOT === String(n)) report.snapshot = writeHeapSnapshot(`${out}.${n}.heapsnapshot`);
  writeFileSync(`${out}.${n}.json`, JSON.stringify(report));
});
