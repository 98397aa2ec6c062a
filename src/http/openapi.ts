import type { FastifyInstance, FastifyReply, FastifyRequest, FastifySchema, RouteOptions } from 'fastify';
import { z } from 'zod';

/** Where the API's own routes live; the document's paths are relative to it. */
export const API_PREFIX = '/v1';

/** The named schemas of one app's document (a registry per app, so ids never clash between apps). */
export type ApiSchemas = z.core.$ZodRegistry<{ id?: string }>;

declare module 'fastify' {
  interface FastifyInstance {
    /** Schemas that appear under a name in /openapi.json's components (see `named`). */
    apiSchemas: ApiSchemas;
  }
}

/** Gives a route schema a name in the document's components; returns it, for use in the route. */
export function named<T extends z.ZodType>(app: FastifyInstance, id: string, schema: T): T {
  if (!app.apiSchemas.has(schema)) app.apiSchemas.add(schema, { id });
  return schema;
}

/**
 * onRoute hook: routes outside /v1 are documented against the server root and need no API key;
 * websocket routes, which the websocket plugin hides, are shown too (their upgrade and close
 * codes are part of the API).
 */
function placeRoute(route: RouteOptions): void {
  if ((route as { websocket?: boolean }).websocket) route.schema = { ...route.schema, hide: false } as FastifySchema;
  if (route.url.startsWith(`${API_PREFIX}/`) || route.url === API_PREFIX) return;
  route.schema = { servers: [{ url: '/' }], security: [], ...route.schema } as FastifySchema;
}

/** Headers of the docs app's answer that are about its own (injected) connection: the server's answer sets its own. */
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'transfer-encoding', 'date']);

/** The Swagger UI's routes, relayed to the docs app rather than documented. */
function isDocsUi(url: string): boolean {
  return url === '/docs' || url.startsWith('/docs/');
}

/**
 * /openapi.json and the Swagger UI at /docs, generated from the zod schemas the routes validate
 * with. Register before any route: the document is built from the routes registered after it.
 * What builds it (@fastify/swagger, the UI and its assets: openapi-docs.ts) loads on the first
 * request for either, a few hundred ms once, so a server nobody asks for its docs never holds it.
 */
export async function openApiRoutes(app: FastifyInstance, opts: { version: string }): Promise<void> {
  const schemas: ApiSchemas = z.registry<{ id?: string }>();
  app.decorate('apiSchemas', schemas);
  app.addHook('onRoute', placeRoute);
  // What @fastify/swagger would have collected: every route but the HEAD twins of GETs.
  const documented: RouteOptions[] = [];
  app.addHook('onRoute', (route) => {
    if (route.method !== 'HEAD' && !isDocsUi(route.url)) documented.push(route);
  });
  let docsApp: Promise<FastifyInstance> | undefined;
  const docs = () => {
    // A build that failed is tried again on the next request, not answered with its error for good.
    docsApp ??= import('./openapi-docs.js')
      .then(({ buildDocsApp }) => buildDocsApp(documented, schemas, opts.version))
      .catch((err: unknown) => {
        docsApp = undefined;
        throw err;
      });
    return docsApp;
  };
  app.get(
    '/openapi.json',
    {
      schema: {
        summary: 'This document (OpenAPI 3.1)',
        response: { 200: z.looseObject({ openapi: z.string(), paths: z.record(z.string(), z.unknown()) }) },
      },
    },
    async () => (await docs()).swagger(),
  );
  const relay = async (request: FastifyRequest, reply: FastifyReply) => {
    // Always a GET: for a HEAD, Fastify sends this route's answer without its body, with its length.
    const answer = await (await docs()).inject({ method: 'GET', url: request.url, headers: request.headers });
    reply.code(answer.statusCode);
    for (const [name, value] of Object.entries(answer.headers)) {
      if (value !== undefined && !HOP_BY_HOP.has(name)) reply.header(name, value);
    }
    return reply.send(answer.rawPayload);
  };
  app.get('/docs', { schema: { hide: true } }, relay);
  app.get('/docs/*', { schema: { hide: true } }, relay);
}
