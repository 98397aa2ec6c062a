import { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { Coordinator, HeldKind, Holder, NodeStatus, NodeView } from './coordinator.js';

/**
 * The coordinator of several nodes, kept in one Redis (REDIS_URL; a single server or a
 * primary with replicas, not Redis Cluster: the scripts below touch keys of several slots).
 *
 * Keys, all under `switchboard:`:
 * - `nodes`: hash node id → its URL; a node is listed from its start until it leaves or is reaped.
 * - `alive:<node>`: the heartbeat, with the node's status; expires after the liveness window.
 * - `held:<kind>`: hash id → holding node (rooms, dial-in callers, dial-out legs, an
 *   account's calls). Its
 *   length is the cluster's count of that kind, which is what the limits compare.
 * - `holds:<node>`: set of `<kind> <id>` a node holds, so that the node that reaps a dead one
 *   can remove exactly what it held.
 * Every step that reads and then writes is one Lua script, so two nodes never both take the last
 * room, nor both reap the same dead node.
 */
const PREFIX = 'switchboard:';

/** Takes an id if nobody holds it and the kind is under its limit (0: none). */
const CLAIM = `
local limit = tonumber(ARGV[3])
if limit > 0 and redis.call('HLEN', KEYS[1]) >= limit then return 0 end
if redis.call('HSETNX', KEYS[1], ARGV[1], ARGV[2]) == 0 then return 0 end
redis.call('SADD', KEYS[2], ARGV[4])
return 1`;

/** Lets go of an id this node holds (and only then: a reaped id may have been taken since). */
const RELEASE = `
if redis.call('HGET', KEYS[1], ARGV[1]) == ARGV[2] then redis.call('HDEL', KEYS[1], ARGV[1]) end
redis.call('SREM', KEYS[2], ARGV[3])
return 1`;

/**
 * Removes a node whose heartbeat has expired, and everything it held. Returns 1 to the one node
 * that did it (it then tidies the store after the dead node), 0 to the others.
 */
const REAP = `
if redis.call('EXISTS', KEYS[2]) == 1 then return 0 end
if redis.call('HDEL', KEYS[1], ARGV[1]) == 0 then return 0 end
for _, member in ipairs(redis.call('SMEMBERS', KEYS[3])) do
  local space = string.find(member, ' ', 1, true)
  local key = ARGV[2] .. 'held:' .. string.sub(member, 1, space - 1)
  local id = string.sub(member, space + 1)
  if redis.call('HGET', key, id) == ARGV[1] then redis.call('HDEL', key, id) end
end
redis.call('DEL', KEYS[3])
return 1`;

/** Writes the heartbeat; returns 1 when the node was not listed (first start, or reaped meanwhile). */
const HEARTBEAT = `
redis.call('SET', KEYS[2], ARGV[3], 'PX', ARGV[4])
return redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])`;

export interface RedisCoordinatorOptions {
  redisUrl: string;
  nodeId: string;
  /** A node whose heartbeat is older than this is dead: the others reap what it held. */
  livenessWindowMs: number;
  log: Logger;
}

interface Heartbeat {
  draining: boolean;
  live_calls: number;
  rooms: number;
  at_ms: number;
}

export class RedisCoordinator implements Coordinator {
  readonly clustered = true;
  readonly nodeId: string;
  private readonly redis: Redis;
  /** What this node holds, so it can take it all back if it was reaped while it could not heartbeat. */
  private readonly held = new Map<string, HeldKind>();
  private readonly deadListeners: Array<(nodeId: string) => void> = [];
  private url = '';
  private status: () => NodeStatus = () => ({ draining: false, liveCalls: 0, rooms: 0 });
  private timer: NodeJS.Timeout | undefined;
  private beating: Promise<void> | undefined;
  private closing: Promise<void> | undefined;

  constructor(private readonly options: RedisCoordinatorOptions) {
    this.nodeId = options.nodeId;
    // A request must not hang while Redis is away: it fails after a retry, and the route answers 503.
    this.redis = new Redis(options.redisUrl, { maxRetriesPerRequest: 1, connectTimeout: 5_000, lazyConnect: true });
    this.redis.on('error', (err: Error) => options.log.warn({ err: err.message }, 'redis connection error'));
  }

  /** Connects (a bad REDIS_URL stops the start-up with its error). */
  async connect(): Promise<void> {
    await this.redis.connect();
  }

  async claim(kind: HeldKind, id: string, limit = 0): Promise<boolean> {
    const member = `${kind} ${id}`;
    const taken =
      (await this.redis.eval(
        CLAIM,
        2,
        key(`held:${kind}`),
        key(`holds:${this.nodeId}`),
        id,
        this.nodeId,
        limit,
        member,
      )) === 1;
    if (taken) this.held.set(member, kind);
    return taken;
  }

  release(kind: HeldKind, id: string): void {
    const member = `${kind} ${id}`;
    this.held.delete(member);
    this.redis
      .eval(RELEASE, 2, key(`held:${kind}`), key(`holds:${this.nodeId}`), id, this.nodeId, member)
      .catch((err: Error) => {
        // Left behind, it goes when this node leaves or is reaped.
        this.options.log.warn({ err: err.message, kind, id }, 'could not release a cluster entry');
      });
  }

  async holderOf(kind: HeldKind, id: string): Promise<Holder | undefined> {
    const nodeId = await this.redis.hget(key(`held:${kind}`), id);
    if (nodeId === null) return undefined;
    if (nodeId === this.nodeId) return { self: true };
    const url = await this.nodeUrl(nodeId);
    return url === undefined ? undefined : { self: false, nodeId, url };
  }

  async nodeUrl(nodeId: string): Promise<string | undefined> {
    const [alive, url] = await Promise.all([
      this.redis.exists(key(`alive:${nodeId}`)),
      this.redis.hget(key('nodes'), nodeId),
    ]);
    return alive === 1 && url !== null ? url : undefined;
  }

  async nodes(): Promise<NodeView[]> {
    const listed = await this.redis.hgetall(key('nodes'));
    const ids = Object.keys(listed).sort();
    if (ids.length === 0) return [];
    const beats = await this.redis.mget(ids.map((id) => key(`alive:${id}`)));
    const now = Date.now();
    const views: NodeView[] = [];
    ids.forEach((id, i) => {
      const raw = beats[i];
      if (!raw) return;
      const beat = JSON.parse(raw) as Heartbeat;
      views.push({
        node_id: id,
        url: listed[id]!,
        draining: beat.draining,
        live_calls: beat.live_calls,
        rooms: beat.rooms,
        heartbeat_age_ms: Math.max(0, now - beat.at_ms),
      });
    });
    return views;
  }

  async start(url: string, status: () => NodeStatus): Promise<void> {
    this.url = url;
    this.status = status;
    await this.beat();
    // Three heartbeats per window: one lost write does not make a live node look dead.
    const everyMs = Math.max(100, Math.floor(this.options.livenessWindowMs / 3));
    this.timer = setInterval(() => {
      this.beating ??= this.beat()
        .then(() => this.reapDead())
        .catch((err: Error) => this.options.log.warn({ err: err.message }, 'cluster heartbeat failed'))
        .finally(() => (this.beating = undefined));
    }, everyMs);
    this.timer.unref();
  }

  onNodeDead(listener: (nodeId: string) => void): void {
    this.deadListeners.push(listener);
  }

  close(): Promise<void> {
    this.closing ??= this.leave();
    return this.closing;
  }

  private async leave(): Promise<void> {
    clearInterval(this.timer);
    await this.beating;
    try {
      // Leaving is reaping oneself: the heartbeat goes first, then the script removes the rest.
      await this.redis.del(key(`alive:${this.nodeId}`));
      await this.redis.eval(
        REAP,
        3,
        key('nodes'),
        key(`alive:${this.nodeId}`),
        key(`holds:${this.nodeId}`),
        this.nodeId,
        PREFIX,
      );
    } catch (err) {
      this.options.log.warn(
        { err: (err as Error).message },
        'could not leave the cluster cleanly; the others will reap this node',
      );
    }
    this.held.clear();
    this.redis.disconnect();
  }

  private async beat(): Promise<void> {
    const status = this.status();
    const beat: Heartbeat = {
      draining: status.draining,
      live_calls: status.liveCalls,
      rooms: status.rooms,
      at_ms: Date.now(),
    };
    const added = await this.redis.eval(
      HEARTBEAT,
      2,
      key('nodes'),
      key(`alive:${this.nodeId}`),
      this.nodeId,
      this.url,
      JSON.stringify(beat),
      this.options.livenessWindowMs,
    );
    if (added === 1 && this.held.size > 0) await this.reclaim();
  }

  /**
   * This node was reaped (it could not heartbeat for a whole window, e.g. Redis was away) but
   * still serves what it held: it takes those back, unless another node has taken one meanwhile.
   */
  private async reclaim(): Promise<void> {
    this.options.log.warn({ held: this.held.size }, 'this node had been taken for dead; taking back what it holds');
    for (const [member, kind] of [...this.held]) {
      const id = member.slice(kind.length + 1);
      if (
        !(await this.redis.eval(CLAIM, 2, key(`held:${kind}`), key(`holds:${this.nodeId}`), id, this.nodeId, 0, member))
      )
        this.held.delete(member);
    }
  }

  /** Every node listed without a heartbeat is dead: one node reaps each, and tidies after it. */
  private async reapDead(): Promise<void> {
    const listed = await this.redis.hkeys(key('nodes'));
    for (const nodeId of listed) {
      if (nodeId === this.nodeId) continue;
      const reaped = await this.redis.eval(
        REAP,
        3,
        key('nodes'),
        key(`alive:${nodeId}`),
        key(`holds:${nodeId}`),
        nodeId,
        PREFIX,
      );
      if (reaped !== 1) continue;
      this.options.log.warn({ deadNode: nodeId }, 'a node stopped heartbeating; its rooms and waiting calls are gone');
      for (const listener of this.deadListeners) listener(nodeId);
    }
  }
}

function key(name: string): string {
  return PREFIX + name;
}
