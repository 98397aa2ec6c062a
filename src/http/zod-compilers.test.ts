import Fastify, { type FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { z } from 'zod';
import { errorHandler } from './errors.js';
import { zodSerializerCompiler, zodValidatorCompiler } from './zod-compilers.js';

let app: FastifyInstance;
let base: string;

beforeAll(async () => {
  app = Fastify();
  app.setValidatorCompiler(zodValidatorCompiler);
  app.setSerializerCompiler(zodSerializerCompiler);
  app.setErrorHandler(errorHandler);
  const typed = app.withTypeProvider<ZodTypeProvider>();
  const answer = z.object({ id: z.string(), count: z.number() });
  typed.post(
    '/echo',
    { schema: { body: z.object({ n: z.number() }).strict(), response: { 200: answer } } },
    async (request) => ({
      // Not in the schema's order, with a key it does not name: sent as built.
      count: request.body.n,
      extra: true,
      id: 'a',
    }),
  );
  typed.get('/broken', { schema: { response: { 200: answer } } }, async () => ({ id: 'a', count: 'many' }) as never);
  await app.listen({ port: 0, host: 'localhost' });
  const address = app.server.address();
  base = `http://localhost:${typeof address === 'object' && address ? address.port : 0}`;
});
afterAll(async () => app.close());

const post = (body: string) =>
  fetch(`${base}/echo`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });

it('answers a failed schema check with the API envelope, naming each field', async () => {
  const res = await post('{"n": "x", "m": 1}');
  expect(res.status).toBe(400);
  expect(await res.json()).toEqual({
    error: 'invalid-request-error',
    info: 'n: Invalid input: expected number, received string; body: Unrecognized key: "m"',
  });
  // JSON null reads as no body at all.
  expect(await (await post('null')).json()).toEqual({
    error: 'invalid-request-error',
    info: 'body: Invalid input: expected object, received undefined',
  });
});

it('sends a fitting answer exactly as the handler built it', async () => {
  const res = await post('{"n": 2}');
  expect(res.status).toBe(200);
  expect(await res.text()).toBe('{"count":2,"extra":true,"id":"a"}');
});

it('answers 500 when an answer breaks its documented schema', async () => {
  const res = await fetch(`${base}/broken`);
  expect(res.status).toBe(500);
  expect(await res.json()).toEqual({ error: 'server-error', info: 'internal error' });
});
