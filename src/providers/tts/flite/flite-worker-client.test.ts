import { describe, expect, it } from 'vitest';
import { synthesizeFlite } from './flite-engine.js';
import { fliteWorkerLoaded, FLITE_IDLE_MS, setFliteIdleMs, synthesizeFliteInWorker } from './flite-worker-client.js';

describe('flite in a worker thread', () => {
  it('speaks exactly what the engine speaks in this thread', async () => {
    const text = 'Sorry, I am having trouble right now.';
    const [inWorker, here] = await Promise.all([synthesizeFliteInWorker(text), synthesizeFlite(text)]);
    expect(inWorker.sampleRateHz).toBe(8000);
    expect(inWorker.samples.length).toBeGreaterThan(8000);
    expect(
      Buffer.from(inWorker.samples.buffer).equals(
        Buffer.from(here.samples.buffer, here.samples.byteOffset, here.samples.byteLength),
      ),
    ).toBe(true);
  }, 30_000);

  it('answers requests in order, rejects an unknown voice, and an aborted request at once', async () => {
    const results = await Promise.all(
      ['One.', 'Two, three.', 'Four, five, six.'].map((text) => synthesizeFliteInWorker(text)),
    );
    // Longer text, longer audio: each answer went to its own request.
    expect(results[0]!.samples.length).toBeLessThan(results[1]!.samples.length);
    expect(results[1]!.samples.length).toBeLessThan(results[2]!.samples.length);
    await expect(synthesizeFliteInWorker('hello', { voice: 'nobody' })).rejects.toThrow('nobody');
    const abort = new AbortController();
    const aborted = synthesizeFliteInWorker('This sentence will not be waited for.', { signal: abort.signal });
    abort.abort(new Error('caller hung up'));
    await expect(aborted).rejects.toThrow('caller hung up');
    // The worker carries on serving later requests.
    expect((await synthesizeFliteInWorker('Still here.')).samples.length).toBeGreaterThan(0);
  }, 30_000);

  it('stops the worker once it has had nothing to say for a while, and starts it again for the next request', async () => {
    setFliteIdleMs(200);
    try {
      await synthesizeFliteInWorker('One.');
      expect(fliteWorkerLoaded()).toBe(true);
      // A request before the wait is over keeps it loaded.
      await new Promise((resolve) => setTimeout(resolve, 100));
      await synthesizeFliteInWorker('Two.');
      await new Promise((resolve) => setTimeout(resolve, 120));
      expect(fliteWorkerLoaded()).toBe(true);
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(fliteWorkerLoaded()).toBe(false);
      expect((await synthesizeFliteInWorker('Back again.')).samples.length).toBeGreaterThan(0);
      expect(fliteWorkerLoaded()).toBe(true);
    } finally {
      setFliteIdleMs(FLITE_IDLE_MS);
    }
  }, 30_000);
});
