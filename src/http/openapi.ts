import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance, FastifySchema, RouteOptions } from 'fastify';
import { createJsonSchemaTransform, createJsonSchemaTransformObject } from 'fastify-type-provider-zod';
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
 * The document names a schema used as input `<id>Input` and as output `<id>`; each of ours is
 * used one way, so it keeps its plain name and the unused twin goes.
 */
function oneNamePerSchema(document: Record<string, unknown>): Record<string, unknown> {
  const text = JSON.stringify(document);
  const uses = (id: string) => text.split(`"#/components/schemas/${id}"`).length - 1;
  const doc = JSON.parse(text) as { components: { schemas: Record<string, unknown> } };
  const schemas = doc.components.schemas;
  const renamed = new Set<string>();
  for (const inputId of Object.keys(schemas).filter((name) => name.endsWith('Input'))) {
    const id = inputId.slice(0, -'Input'.length);
    if (!(id in schemas)) continue;
    if (uses(inputId) === 0) delete schemas[inputId];
    else if (uses(id) === 0) {
      schemas[id] = schemas[inputId];
      delete schemas[inputId];
      renamed.add(id);
    }
  }
  const refs = /"#\/components\/schemas\/(\w+)Input"/g;
  return JSON.parse(
    JSON.stringify(doc).replace(refs, (ref, id: string) => (renamed.has(id) ? `"#/components/schemas/${id}"` : ref)),
  );
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

/**
 * /openapi.json and the Swagger UI at /docs, generated from the zod schemas the routes validate
 * with. Register before any route: the document is built from the routes registered after it.
 */
export async function openApiRoutes(app: FastifyInstance, opts: { version: string }): Promise<void> {
  const schemas: ApiSchemas = z.registry<{ id?: string }>();
  app.decorate('apiSchemas', schemas);
  app.addHook('onRoute', placeRoute);
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Switchboard',
        version: opts.version,
        description:
          'Self-hosted voice-bot hosting: bots in rooms and on phone numbers, numbers, pinless dial-in, dial-out and recordings.',
      },
      servers: [{ url: API_PREFIX }],
      security: [{ bearer: [] }],
      components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } } },
    },
    transform: createJsonSchemaTransform({ schemaRegistry: schemas, skipList: [] }),
    transformObject: (input) =>
      oneNamePerSchema(
        createJsonSchemaTransformObject({ schemaRegistry: schemas })(input) as Record<string, unknown>,
      ) as never,
  });
  await app.register(swaggerUi, { routePrefix: '/docs' });
  app.get(
    '/openapi.json',
    {
      schema: {
        summary: 'This document (OpenAPI 3.1)',
        response: { 200: z.looseObject({ openapi: z.string(), paths: z.record(z.string(), z.unknown()) }) },
      },
    },
    async () => app.swagger(),
  );
}
