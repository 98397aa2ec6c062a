import { describe, expect, it } from 'vitest';
import type { EchoRequest, EchoResponse } from '../../test/fakes/echo-worker.js';
import { WorkerRpc } from './worker-rpc.js';

/** The echo worker in test/fakes: the directory's URL stands for a file beside it. */
const echo = (idleMs?: number) =>
  new WorkerRpc<EchoRequest, EchoResponse, string>({
    besideUrl: new URL('../../test/fakes/', import.meta.url).href,
    name: 'echo-worker',
    result: (response) => response.echoed,
    idleMs: idleMs === undefined ? undefined : () => idleMs,
  });

describe('a worker answering requests by id', () => {
  it('gives each request its own answer, in whatever order they come back, and an error as a rejection', async () => {
    const rpc = echo();
    const answers = await Promise.all([
      rpc.request({ text: 'slow', delayMs: 300 }),
      rpc.request({ text: 'fast' }),
      rpc.request({ text: 'middle', delayMs: 100 }),
    ]);
    expect(answers).toEqual(['slow', 'fast', 'middle']);
    await expect(rpc.request({ text: 'this', fail: true })).rejects.toThrow('refused: this');
    expect(await rpc.request({ text: 'after' })).toBe('after');
  }, 30_000);

  it('fails every request in flight when the worker dies, and starts a new worker for the next', async () => {
    const rpc = echo();
    rpc.warm();
    expect(rpc.loaded).toBe(true);
    const inFlight = [rpc.request({ text: 'one', delayMs: 5000 }), rpc.request({ text: 'two', delayMs: 5000 })];
    const dying = rpc.request({ text: 'bye', exit: true });
    for (const request of [...inFlight, dying]) await expect(request).rejects.toThrow('echo worker exited (code 3)');
    expect(rpc.loaded).toBe(false);
    expect(await rpc.request({ text: 'again' })).toBe('again');
    expect(rpc.loaded).toBe(true);
  }, 30_000);

  it('rejects an aborted request at once with its reason, and one already aborted without posting it', async () => {
    const rpc = echo();
    const abort = new AbortController();
    const aborted = rpc.request({ text: 'never mind', delayMs: 5000 }, abort.signal);
    abort.abort(new Error('caller hung up'));
    await expect(aborted).rejects.toThrow('caller hung up');
    await expect(rpc.request({ text: 'late' }, abort.signal)).rejects.toThrow('caller hung up');
    expect(await rpc.request({ text: 'still here' })).toBe('still here');
  }, 30_000);

  it('stops an idle worker only when asked to', async () => {
    const stays = echo();
    const stops = echo(100);
    await Promise.all([stays.request({ text: 'a' }), stops.request({ text: 'b' })]);
    await new Promise((resolve) => setTimeout(resolve, 400));
    expect(stays.loaded).toBe(true);
    expect(stops.loaded).toBe(false);
    expect(await stops.request({ text: 'back' })).toBe('back');
  }, 30_000);
});
