/** The Redis coordinator against a real redis-server: limits taken in one step, liveness, reaping. */
import { afterEach, describe, expect, it } from 'vitest';
import { RedisCoordinator } from '../../src/cluster/redis-coordinator.js';
import { createLogger } from '../../src/observability/logger.js';
import { type RedisServer, startRedis } from '../helpers/redis-server.js';
import { redisLookup, until } from './cluster-harness.js';

const log = createLogger('silent');
let redis: RedisServer | undefined;
const coordinators: RedisCoordinator[] = [];
afterEach(async () => {
  for (const c of coordinators.splice(0)) await c.close();
  await redis?.stop();
});

async function node(id: string, livenessWindowMs = 600): Promise<RedisCoordinator> {
  const coordinator = new RedisCoordinator({ redisUrl: redis!.url, nodeId: id, livenessWindowMs, log });
  await coordinator.connect();
  coordinators.push(coordinator);
  await coordinator.start(`http://${id}.internal:8080`, () => ({ draining: false, liveCalls: 0, rooms: 0 }));
  return coordinator;
}

describe.skipIf(!redisLookup.ok)('RedisCoordinator', () => {
  it('takes the last places of a limit once, however many nodes ask at the same moment', async () => {
    redis = await startRedis((redisLookup as { binary: string }).binary);
    const [a, b] = [await node('a'), await node('b')];
    const asks = Array.from({ length: 20 }, (_, i) => (i % 2 ? a : b).claim('room', `room-${i}`, 5));
    expect((await Promise.all(asks)).filter(Boolean)).toHaveLength(5);
    expect(await a.claim('room', 'room-0', 100)).toBe(false); // already held
    const held = (await Promise.all(Array.from({ length: 20 }, (_, i) => a.holderOf('room', `room-${i}`)))).filter(
      Boolean,
    );
    expect(held).toHaveLength(5);
  });

  it('finds the holder on another node by its URL; a dead node’s holdings are gone once its heartbeat expires, and it takes them back if it was alive after all', async () => {
    redis = await startRedis((redisLookup as { binary: string }).binary);
    const [a, b] = [await node('a'), await node('b')];
    const dead: string[] = [];
    b.onNodeDead((id) => dead.push(id));
    expect(await a.claim('dialin', 'call-1')).toBe(true);
    expect(await b.holderOf('dialin', 'call-1')).toEqual({ self: false, nodeId: 'a', url: 'http://a.internal:8080' });
    expect(await a.holderOf('dialin', 'call-1')).toEqual({ self: true });

    // A stops heartbeating (a paused or dead process): B reaps it within a few heartbeats.
    clearInterval((a as unknown as { timer: NodeJS.Timeout }).timer);
    await until(() => dead.length > 0);
    expect(dead).toEqual(['a']);
    expect(await b.holderOf('dialin', 'call-1')).toBeUndefined();
    expect((await b.nodes()).map((n) => n.node_id)).toEqual(['b']);

    // A was alive after all: its next heartbeat takes back what it still holds.
    await (a as unknown as { beat(): Promise<void> }).beat();
    expect(await b.holderOf('dialin', 'call-1')).toMatchObject({ nodeId: 'a' });
  });
});
