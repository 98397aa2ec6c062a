import { timingSafeEqual } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { Coordinator } from '../cluster/coordinator.js';
import type { LiveCalls } from '../lifecycle/live-calls.js';
import type { ServiceMetrics } from '../observability/metrics.js';
import type { OpenedDatabase } from '../store/database.js';
import { errorResponses } from './error-responses.js';
import { ApiError } from '../shared/api-error.js';
import { sendError } from './errors.js';

export interface OperatorRoutesOptions {
  database: OpenedDatabase;
  liveCalls: LiveCalls;
  metrics: ServiceMetrics;
  /** When set, GET /metrics needs `Authorization: Bearer <token>`. */
  metricsToken?: string;
  version: string;
  /** Answers the cluster view. */
  cluster: Coordinator;
}

/** Constant-time check of `Bearer <token>`. */
function bearerMatches(header: string | undefined, token: string): boolean {
  const presented = Buffer.from(header ?? '');
  const expected = Buffer.from(`Bearer ${token}`);
  return presented.length === expected.length && timingSafeEqual(presented, expected);
}

const nodeView = z.object({
  node_id: z.string(),
  url: z.string(),
  draining: z.boolean(),
  live_calls: z.number(),
  rooms: z.number(),
  heartbeat_age_ms: z.number(),
});

/** /healthz for load balancers, /metrics for Prometheus and /cluster for operators; no API key. */
export async function operatorRoutes(instance: FastifyInstance, opts: OperatorRoutesOptions): Promise<void> {
  const app = instance.withTypeProvider<ZodTypeProvider>();

  app.get(
    '/healthz',
    {
      schema: {
        summary: 'Health: 200 while the store is usable and the server takes calls',
        response: {
          200: z.object({ status: z.literal('ok'), version: z.string() }),
          ...errorResponses('service-unavailable'),
        },
      },
    },
    async (_request, reply) => {
      // A load balancer stops sending new calls here while the live ones finish (answered, not logged as a failure).
      if (opts.liveCalls.isDraining)
        return sendError(reply, new ApiError('service-unavailable', 'the server is shutting down'));
      if (!(await opts.database.ping()))
        return sendError(reply, new ApiError('service-unavailable', 'the store is not usable'));
      return { status: 'ok' as const, version: opts.version };
    },
  );

  app.get(
    '/metrics',
    {
      schema: {
        summary: 'Prometheus metrics',
        description: 'With SWITCHBOARD_METRICS_TOKEN set, send Authorization: Bearer <token>.',
        response: {
          200: { description: 'Prometheus text format', content: { 'text/plain': { schema: z.string() } } },
          ...errorResponses('authentication-error'),
        },
      },
    },
    async (request, reply) => {
      if (opts.metricsToken && !bearerMatches(request.headers.authorization, opts.metricsToken)) {
        return sendError(
          reply,
          new ApiError('authentication-error', 'GET /metrics needs Authorization: Bearer <SWITCHBOARD_METRICS_TOKEN>'),
        );
      }
      reply.type(opts.metrics.registry.contentType);
      return opts.metrics.registry.metrics();
    },
  );

  // The operators' view of the cluster: every live node, its live calls and rooms, whether it drains.
  app.get(
    '/cluster',
    {
      schema: {
        summary: 'The live nodes of the cluster',
        description: 'Same token as /metrics. Without REDIS_URL the cluster is this one node.',
        response: {
          200: z.object({ node_id: z.string(), clustered: z.boolean(), nodes: z.array(nodeView) }),
          ...errorResponses('authentication-error'),
        },
      },
    },
    async (request, reply) => {
      if (opts.metricsToken && !bearerMatches(request.headers.authorization, opts.metricsToken)) {
        return sendError(
          reply,
          new ApiError('authentication-error', 'GET /cluster needs Authorization: Bearer <SWITCHBOARD_METRICS_TOKEN>'),
        );
      }
      return { node_id: opts.cluster.nodeId, clustered: opts.cluster.clustered, nodes: await opts.cluster.nodes() };
    },
  );
}
