import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ERROR_TYPES } from '../../src/shared/api-error.js';
import { type TestApp, createTestApp } from '../helpers/test-app.js';

/**
 * /openapi.json is generated from the routes' own schemas: every route the app serves is in it,
 * with the errors it can answer, and it is a well-formed OpenAPI 3.1 document.
 */

interface Operation {
  summary?: string;
  parameters?: Array<{ name: string; in: string; required?: boolean }>;
  requestBody?: { content: Record<string, unknown> };
  responses: Record<string, { description?: string; content?: Record<string, { schema?: ErrorSchema }> }>;
}
interface ErrorSchema {
  properties?: { error?: { enum?: string[] }; info?: unknown };
}
type Doc = {
  openapi: string;
  info: { title: string; version: string };
  servers: Array<{ url: string }>;
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, unknown> };
};

/** Every (method, url) the app routes, read from Fastify's own route tree. */
function registeredRoutes(tree: string): Array<{ method: string; url: string }> {
  const stack: string[] = [];
  const routes: Array<{ method: string; url: string }> = [];
  for (const line of tree.split('\n')) {
    const match = /^((?:[│ ] {3})*)[├└]── (.*?)(?: \(([^)]*)\))?$/.exec(line);
    if (!match) continue;
    stack.length = (match[1] ?? '').length / 4;
    stack.push(match[2] ?? '');
    for (const method of (match[3] ?? '').split(', ').filter(Boolean)) routes.push({ method, url: stack.join('') });
  }
  return routes;
}

/** Where a route appears in the document: /v1 routes relative to the /v1 server, parameters in braces. */
function documentedPath(url: string): string {
  const relative = url.startsWith('/v1') ? url.slice('/v1'.length) || '/' : url;
  return relative.replace(/:(\w+)/g, '{$1}');
}

function errorTypesOf(response: Operation['responses'][string] | undefined): string[] {
  return response?.content?.['application/json']?.schema?.properties?.error?.enum ?? [];
}

let t: TestApp;
let doc: Doc;
let routes: Array<{ method: string; url: string }>;

beforeAll(async () => {
  // With CORS origins, the preflight route of POST /v1/bots/start exists too.
  t = await createTestApp({ SWITCHBOARD_CORS_ORIGINS: 'https://app.example' });
  const res = await t.app.inject({ method: 'GET', url: '/openapi.json' });
  expect(res.statusCode).toBe(200);
  doc = res.json();
  routes = registeredRoutes(t.app.printRoutes({ commonPrefix: false })).filter(
    // HEAD mirrors GET; /docs is the Swagger UI serving this document.
    (r) => r.method !== 'HEAD' && !r.url.startsWith('/docs'),
  );
});
afterAll(async () => t.close());

describe('the OpenAPI document', () => {
  it('lists every registered route', () => {
    expect(routes.length).toBeGreaterThan(25);
    const missing = routes.filter((r) => !doc.paths[documentedPath(r.url)]?.[r.method.toLowerCase()]);
    expect(missing).toEqual([]);
  });

  it('gives every route a summary and its error responses', () => {
    for (const { method, url } of routes) {
      const where = `${method} ${url}`;
      const op = doc.paths[documentedPath(url)]![method.toLowerCase()]!;
      expect(op.summary, where).toBeTruthy();
      const isSocket = Boolean(op.responses['101']);
      if (isSocket) {
        expect(op.responses['404'], where).toBeDefined();
        continue;
      }
      expect(errorTypesOf(op.responses['500']), where).toEqual(['server-error']);
      // Each documented error names only types of the registry, under the status they answer with.
      for (const [status, response] of Object.entries(op.responses)) {
        for (const type of errorTypesOf(response)) {
          expect(ERROR_TYPES[type as keyof typeof ERROR_TYPES], `${where} ${status} ${type}`).toBe(Number(status));
        }
      }
      if (url.startsWith('/v1') && method !== 'OPTIONS') {
        expect(errorTypesOf(op.responses['400']), where).toContain('authorization-header-error');
        expect(errorTypesOf(op.responses['401']), where).toContain('authentication-error');
      }
      if (op.requestBody?.content['application/json']) {
        expect(errorTypesOf(op.responses['400']), where).toEqual(
          expect.arrayContaining(['json-parsing-error', 'invalid-request-error']),
        );
        expect(errorTypesOf(op.responses['413']), where).toEqual(['payload-too-large']);
        expect(errorTypesOf(op.responses['415']), where).toEqual(['unsupported-media-type']);
      }
      // A checked query is a 400 when it does not fit.
      if (op.parameters?.some((p) => p.in === 'query'))
        expect(errorTypesOf(op.responses['400']), where).toContain('invalid-request-error');
    }
    // Errors the services raise, per route.
    expect(errorTypesOf(doc.paths['/bots/start']!.post!.responses['503'])).toEqual(['service-unavailable']);
    expect(errorTypesOf(doc.paths['/buy-phone-number']!.post!.responses['409'])).toEqual(['conflict-error']);
    expect(errorTypesOf(doc.paths['/buy-phone-number']!.post!.responses['502'])).toEqual(['carrier-error']);
    expect(errorTypesOf(doc.paths['/recordings/{id}/access-link']!.get!.responses['403'])).toEqual(['forbidden-error']);
    expect(Object.keys(doc.paths['/twilio/voice/{id}']!.post!.responses['403']!.content!)).toEqual(['text/xml']);
  });

  it('is a well-formed OpenAPI 3.1 document', () => {
    expect(doc.openapi).toMatch(/^3\.1\.\d+$/);
    expect(doc.info.title).toBe('Switchboard');
    expect(typeof doc.info.version).toBe('string');
    expect(doc.servers).toEqual([{ url: '/v1' }]);
    const methods = new Set(['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace']);
    for (const [path, item] of Object.entries(doc.paths)) {
      expect(path).toMatch(/^\//);
      const templated = [...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]);
      for (const [method, op] of Object.entries(item)) {
        if (method === 'parameters' || method === 'servers') continue;
        expect(methods.has(method), `${method} ${path}`).toBe(true);
        expect(Object.keys(op.responses).length, `${method} ${path}`).toBeGreaterThan(0);
        for (const [status, response] of Object.entries(op.responses)) {
          expect(status).toMatch(/^[1-5]\d\d$|^default$/);
          expect(typeof response.description, `${method} ${path} ${status}`).toBe('string');
        }
        const pathParams = (op.parameters ?? []).filter((p) => p.in === 'path');
        expect(pathParams.map((p) => p.name).sort(), `${method} ${path}`).toEqual([...templated].sort());
        for (const p of pathParams) expect(p.required).toBe(true);
      }
    }
    // Every reference resolves to a component.
    const refs = [...JSON.stringify(doc).matchAll(/"\$ref":"([^"]+)"/g)].map((m) => m[1]!);
    expect(refs.length).toBeGreaterThan(0);
    for (const ref of refs) {
      expect(ref).toMatch(/^#\/components\/schemas\//);
      expect(doc.components.schemas[ref.slice('#/components/schemas/'.length)], ref).toBeDefined();
    }
  });

  it('describes request bodies with the schemas the routes validate with', () => {
    const body = doc.paths['/bots/twilio-config']!.post!.requestBody!.content['application/json'] as {
      schema: { $ref: string };
    };
    expect(body.schema.$ref).toBe('#/components/schemas/TelephonyConfigRequest');
    const request = doc.components.schemas.TelephonyConfigRequest as {
      additionalProperties: boolean;
      required: string[];
    };
    // .strict() in the schema is additionalProperties: false in the document.
    expect(request.additionalProperties).toBe(false);
    expect(request.required).toContain('bot_profile');
  });
});
