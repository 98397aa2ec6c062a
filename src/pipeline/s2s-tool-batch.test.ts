import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { REAL_CLOCK } from '../shared/clock.js';
import type { CallTools, RunningTool } from './call-tools.js';
import { S2sToolBatch } from './s2s-tool-batch.js';

/** Function calls that never answer: the test watches only the signal each was given. */
function batchWithSignals() {
  const signals: AbortSignal[] = [];
  const tools = {
    run(call, signal): RunningTool {
      signals.push(signal);
      return { call, spec: undefined, result: new Promise(() => undefined), repeated: false };
    },
  } as Pick<CallTools, 'run'> as CallTools;
  const log = pino({ level: 'silent' });
  const batch = new S2sToolBatch(
    tools,
    { send: () => undefined, say: () => undefined, append: () => undefined, endCall: () => undefined, log: () => log },
    REAL_CLOCK,
  );
  const call = (id: string) => batch.onToolCall({ id, name: 'book_table', argumentsJson: '{}' });
  return { batch, signals, call };
}

describe('S2sToolBatch.interrupt', () => {
  it('aborts the signal of every call made since the last barge-in, and only those', () => {
    const { batch, signals, call } = batchWithSignals();
    batch.interrupt(); // no call yet: nothing to abort
    call('a');
    call('b');
    batch.interrupt();
    expect(signals.map((s) => s.aborted)).toEqual([true, true]);
    batch.interrupt(); // no call since: nothing more
    call('c');
    expect(signals[2]!.aborted).toBe(false);
    batch.interrupt();
    expect(signals[2]!.aborted).toBe(true);
    batch.dispose();
  });
});
