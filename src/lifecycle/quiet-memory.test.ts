import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import pino from 'pino';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { LiveCalls } from './live-calls.js';
import { QUIET_COLLECT_MS, QuietMemory } from './quiet-memory.js';

const log = pino({ level: 'silent' });
const call = () => ({ endWithGoodbye: () => undefined, endNow: () => undefined });

describe('QuietMemory', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('after the last call, collects in full twice and then the young generation, while no call is live', async () => {
    vi.useFakeTimers();
    const liveCalls = new LiveCalls();
    const collected: string[] = [];
    const quiet = new QuietMemory(liveCalls, (options) => collected.push(options?.type ?? 'full'), log);
    const endA = liveCalls.add(call());
    const endB = liveCalls.add(call());
    endA();
    await vi.advanceTimersByTimeAsync(QUIET_COLLECT_MS * 5);
    expect(collected).toEqual([]); // a call is still live
    endB();
    await vi.advanceTimersByTimeAsync(QUIET_COLLECT_MS - 1);
    expect(collected).toEqual([]);
    await vi.advanceTimersByTimeAsync(10_000);
    expect(collected).toEqual(['full', 'full', ...Array(10).fill('minor')]);
    quiet.stop();
  });

  it('stops as soon as a call starts, even one that has ended again by then', async () => {
    vi.useFakeTimers();
    const liveCalls = new LiveCalls();
    const collected: string[] = [];
    const quiet = new QuietMemory(liveCalls, (options) => collected.push(options?.type ?? 'full'), log);
    liveCalls.add(call())();
    await vi.advanceTimersByTimeAsync(QUIET_COLLECT_MS / 2);
    const end = liveCalls.add(call());
    await vi.advanceTimersByTimeAsync(10_000);
    expect(collected).toEqual([]);
    end();
    await vi.advanceTimersByTimeAsync(QUIET_COLLECT_MS + 150);
    expect(collected).toEqual(['full', 'full', 'minor']);
    // A call that comes and goes between two young-generation steps ends this round.
    liveCalls.add(call());
    await vi.advanceTimersByTimeAsync(10_000);
    expect(collected).toEqual(['full', 'full', 'minor']);
    quiet.stop();
  });

  it('gives V8 young generation back in a real process once the calls have ended, without exposing gc() to the app', async () => {
    const liveCallsModule = fileURLToPath(new URL('./live-calls.ts', import.meta.url));
    const quietModule = fileURLToPath(new URL('./quiet-memory.ts', import.meta.url));
    // Calls' allocations grow the young generation to its full size; then the last call ends.
    const script = `
      import v8 from 'node:v8';
      import pino from 'pino';
      import { LiveCalls } from ${JSON.stringify(liveCallsModule)};
      import { QuietMemory } from ${JSON.stringify(quietModule)};
      const youngBytes = () => v8.getHeapSpaceStatistics().find((s) => s.space_name === 'new_space').physical_space_size;
      const liveCalls = new LiveCalls();
      const quiet = QuietMemory.start(liveCalls, pino({ level: 'silent' }));
      const end = liveCalls.add({ endWithGoodbye() {}, endNow() {} });
      let kept = [];
      for (let i = 0; i < 2e7; i++) {
        kept.push({ i, samples: [i] });
        if (kept.length > 2e5) kept = [];
      }
      kept = null;
      const during = youngBytes();
      end();
      await new Promise((resolve) => setTimeout(resolve, 4000));
      console.log(JSON.stringify({ started: quiet !== undefined, gcLeaked: typeof globalThis.gc, during, after: youngBytes() }));
    `;
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
    await once(child, 'exit');
    expect(err).toBe('');
    const result = JSON.parse(out) as { started: boolean; gcLeaked: string; during: number; after: number };
    expect(result.started).toBe(true);
    expect(result.gcLeaked).toBe('undefined');
    expect(result.during).toBeGreaterThanOrEqual(16 * 2 ** 20);
    expect(result.after).toBeLessThanOrEqual(result.during / 8);
  }, 60_000);
});
