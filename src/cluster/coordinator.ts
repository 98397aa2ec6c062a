/**
 * What several nodes behind one address agree on, so that each request may land on any of them:
 * who holds each live thing (a room, a dial-in caller on hold), how many of a kind the cluster
 * holds (for limits), and which nodes are alive. One interface, two implementations: in-process
 * (one node, the default; behaves exactly as a single server always has) and Redis (REDIS_URL).
 */

/** How a node is seen by the others (the operators' cluster view). */
export interface NodeView {
  node_id: string;
  /** Where the other nodes reach it (SWITCHBOARD_NODE_URL). */
  url: string;
  draining: boolean;
  live_calls: number;
  rooms: number;
  /** How long ago its last heartbeat was written. */
  heartbeat_age_ms: number;
}

/** What a node reports about itself with each heartbeat. */
export interface NodeStatus {
  draining: boolean;
  liveCalls: number;
  rooms: number;
}

/** Who holds a thing: this node, or another live node and where to reach it. */
export type Holder = { self: true } | { self: false; nodeId: string; url: string };

/**
 * Kinds of held things. `room`, `dialin` (a caller on hold, by callId) and `dialout` (a leg a
 * room's bot placed, by leg id) are looked up by id; an account's live calls
 * (`calls:<account id>`) are only counted.
 */
export type HeldKind = 'room' | 'dialin' | 'dialout' | `calls:${string}`;

export interface Coordinator {
  /** This node's id (its data dir's, which recordings carry too). */
  readonly nodeId: string;
  /** Whether other nodes may exist: false for the in-process coordinator. */
  readonly clustered: boolean;
  /**
   * Takes `id` of `kind` for this node. False when another node holds it, or when the cluster
   * already holds `limit` of that kind (the check and the take are one step).
   */
  claim(kind: HeldKind, id: string, limit?: number): Promise<boolean>;
  /** Lets go of what `claim` took (a room closed, a caller was handed over or hung up). */
  release(kind: HeldKind, id: string): void;
  /** Who holds `id` now; undefined when nobody alive does. */
  holderOf(kind: HeldKind, id: string): Promise<Holder | undefined>;
  /** A live node's URL, by id; undefined when it is not alive (recordings whose files it keeps). */
  nodeUrl(nodeId: string): Promise<string | undefined>;
  /** Every live node, this one included. */
  nodes(): Promise<NodeView[]>;
  /**
   * Joins the cluster once the server listens: `url` is where the others reach this node,
   * `status` is read at each heartbeat.
   */
  start(url: string, status: () => NodeStatus): Promise<void>;
  /** Called on the node that cleaned up after a dead one, with its id (recordings it left). */
  onNodeDead(listener: (nodeId: string) => void): void;
  /** Leaves the cluster: releases everything held, so the others need not wait for the liveness window. */
  close(): Promise<void>;
}

/** One node, in process: what a single server has always done, counted in memory. */
export class LocalCoordinator implements Coordinator {
  readonly clustered = false;
  private readonly held = new Map<string, Set<string>>();
  private url = '';
  private status: () => NodeStatus = () => ({ draining: false, liveCalls: 0, rooms: 0 });

  constructor(readonly nodeId: string) {}

  async claim(kind: HeldKind, id: string, limit?: number): Promise<boolean> {
    let ids = this.held.get(kind);
    if (!ids) {
      ids = new Set();
      this.held.set(kind, ids);
    }
    if (ids.has(id) || (limit !== undefined && ids.size >= limit)) return false;
    ids.add(id);
    return true;
  }

  release(kind: HeldKind, id: string): void {
    const ids = this.held.get(kind);
    ids?.delete(id);
    if (ids?.size === 0) this.held.delete(kind);
  }

  async holderOf(kind: HeldKind, id: string): Promise<Holder | undefined> {
    return this.held.get(kind)?.has(id) ? { self: true } : undefined;
  }

  async nodeUrl(nodeId: string): Promise<string | undefined> {
    return nodeId === this.nodeId && this.url ? this.url : undefined;
  }

  async nodes(): Promise<NodeView[]> {
    const status = this.status();
    return [
      {
        node_id: this.nodeId,
        url: this.url,
        draining: status.draining,
        live_calls: status.liveCalls,
        rooms: status.rooms,
        heartbeat_age_ms: 0,
      },
    ];
  }

  async start(url: string, status: () => NodeStatus): Promise<void> {
    this.url = url;
    this.status = status;
  }

  onNodeDead(): void {}

  async close(): Promise<void> {
    this.held.clear();
  }
}
