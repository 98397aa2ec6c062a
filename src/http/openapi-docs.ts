import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import Fastify, { type FastifyInstance, type RouteOptions } from 'fastify';
import { createJsonSchemaTransform, createJsonSchemaTransformObject } from 'fastify-type-provider-zod';
import { API_PREFIX, type ApiSchemas } from './openapi.js';

/**
 * The OpenAPI document and the Swagger UI, in a Fastify app of their own that the server builds
 * on the first request for either (openapi.ts): @fastify/swagger, the UI and its assets took about
 * 4 MB of a server that nobody asked for its docs (docs/cost-per-call.md, "The docs on demand").
 * It holds a copy of each documented route of the server (the same options and zod schemas), so
 * @fastify/swagger builds the document it always did; the copies never serve a request.
 */
export async function buildDocsApp(
  routes: readonly RouteOptions[],
  schemas: ApiSchemas,
  version: string,
): Promise<FastifyInstance> {
  const app = Fastify({ logger: false, exposeHeadRoutes: false });
  // The copies only lend their schemas to the document: nothing of theirs is compiled to run.
  app.setValidatorCompiler(() => () => true);
  app.setSerializerCompiler(() => (data) => JSON.stringify(data));
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Switchboard',
        version,
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
  for (const route of routes) {
    app.route({
      method: route.method,
      url: route.url,
      schema: route.schema,
      config: route.config,
      constraints: route.constraints,
      handler: notServedHere,
    });
  }
  await app.ready();
  return app;
}

async function notServedHere(): Promise<never> {
  throw new Error('the docs app only documents this route; the server serves it');
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
