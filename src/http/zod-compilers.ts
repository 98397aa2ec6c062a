import type { FastifySchemaCompiler, FastifySerializerCompiler } from 'fastify';
import { ResponseSerializationError } from 'fastify-type-provider-zod';
import type { z } from 'zod';
import { validationError } from '../shared/api-error.js';

/** How a failed check names the whole part it checked ("body: expected object, …"). */
const PART_NAMES: Record<string, string> = {
  body: 'body',
  querystring: 'query',
  params: 'request',
  headers: 'headers',
};

/**
 * Runs a route's zod schema on one part of the request. A failure is the API's own 400,
 * `invalid-request-error` with every issue by field path, so schema validation answers exactly
 * as the hand-written checks before it did. An absent body reaches zod as `undefined` (Fastify
 * passes `null`), so "no body" and `null` read the same.
 */
export const zodValidatorCompiler: FastifySchemaCompiler<z.ZodType> =
  ({ schema, httpPart }) =>
  (data) => {
    const result = schema.safeParse(data ?? undefined);
    if (result.success) return { value: result.data };
    return { error: validationError(result.error, PART_NAMES[httpPart ?? 'body'] ?? 'request') };
  };

/**
 * Checks a JSON answer against the route's documented response schema, then sends the answer as
 * the handler built it: the check keeps the document honest without zod reordering or dropping
 * keys on the wire. A mismatch is a bug in this service, answered 500 and logged.
 */
export const zodSerializerCompiler: FastifySerializerCompiler<z.ZodType> = ({ schema, method, url }) => {
  return (data) => {
    const result = schema.safeParse(data);
    if (!result.success) throw new ResponseSerializationError(method, url, { cause: result.error });
    return JSON.stringify(data);
  };
};
