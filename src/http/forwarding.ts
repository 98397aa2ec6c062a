import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import type WebSocket from 'ws';
import type { Coordinator, HeldKind } from '../cluster/coordinator.js';
import { forwardRequest, relaySocket, wasForwarded } from './forward.js';

/**
 * Where a request's subject is held when that is another node: that node's URL. Undefined when
 * this node answers: it holds the subject, or nobody does (then the route answers "not found").
 */
export type Locate<R extends FastifyRequest> = (request: R) => Promise<string | undefined> | string | undefined;

/**
 * "Is this mine, otherwise pass it on", once for every route. A route that serves something one
 * node holds (a room, a caller on hold, a dial-out leg, a recording's files) declares where that
 * is with `hook(locate)`; the hook runs before the route's handler and, with several nodes, passes
 * the request to the holding node and answers with its answer. A websocket is looked up before
 * the upgrade and relayed after it: its handler is wrapped in `relaying(...)`.
 *
 * A request another node forwarded is never forwarded again, so two nodes that disagree cannot
 * bounce it between them; on a single node nothing is looked up.
 */
export class Forwarding {
  /** Sockets to relay, by upgrade request: set by the hook, taken by `relaying`. */
  private readonly relayTo = new WeakMap<FastifyRequest, string>();

  constructor(private readonly cluster: Coordinator) {}

  /** The URL of the node holding `id` as `kind`, when it is another node. */
  async nodeHolding(kind: HeldKind, id: string): Promise<string | undefined> {
    const holder = await this.cluster.holderOf(kind, id);
    return holder && !holder.self ? holder.url : undefined;
  }

  /** The URL of the node `nodeId`, or undefined when it is not running. */
  nodeUrl(nodeId: string): Promise<string | undefined> {
    return this.cluster.nodeUrl(nodeId);
  }

  /** A route's `preHandler`: forwards the request (or marks the socket for relay) when `locate` names another node. */
  hook<R extends FastifyRequest>(locate: Locate<R>) {
    return async (request: R, reply: FastifyReply): Promise<FastifyReply | undefined> => {
      if (!this.cluster.clustered || wasForwarded(request)) return undefined;
      const nodeUrl = await locate(request);
      if (nodeUrl === undefined) return undefined;
      if (request.ws) {
        this.relayTo.set(request, nodeUrl);
        return undefined;
      }
      return forwardRequest(request, reply, nodeUrl, this.cluster.nodeId);
    };
  }

  /** Wraps a websocket route's handler: a socket the hook marked goes to its node, the rest to `handler`. */
  relaying<R extends FastifyRequest>(
    handler: (socket: WebSocket, request: R) => void,
  ): (socket: WebSocket, request: R) => void {
    return (socket, request) => {
      const nodeUrl = this.relayTo.get(request);
      if (nodeUrl === undefined) return handler(socket, request);
      this.relayTo.delete(request);
      relaySocket(socket, request, {
        fromNodeId: this.cluster.nodeId,
        // Fastify's logger is the process's pino instance (buildApp passes it in), typed more narrowly.
        log: request.log as Logger,
        nodeUrl,
      });
    };
  }
}
