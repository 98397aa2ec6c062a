import type { FastifySchema, RouteOptions } from 'fastify';
import { z } from 'zod';
import { ERROR_TYPES, type ErrorType } from '../shared/api-error.js';

/** One documented error status: the envelope, its `error` limited to the types that status carries. */
export interface ErrorResponse {
  description: string;
  content: { 'application/json': { schema: z.ZodObject } };
}

/** The errors any route with a JSON body can answer: Fastify's body parsing and the schema check. */
export const BODY_ERRORS: readonly ErrorType[] = [
  'json-parsing-error',
  'invalid-request-error',
  'payload-too-large',
  'unsupported-media-type',
];

/** The errors of the API-key check on every /v1 route. */
export const AUTH_ERRORS: readonly ErrorType[] = ['authorization-header-error', 'authentication-error'];

function envelope(types: readonly ErrorType[]): z.ZodObject {
  return z.object({ error: z.enum(types as [ErrorType, ...ErrorType[]]), info: z.string().optional() });
}

/** The error types an entry built here documents (none for anything else, such as an XML answer). */
function typesOf(entry: unknown): ErrorType[] {
  const schema = (entry as Partial<ErrorResponse> | undefined)?.content?.['application/json']?.schema;
  const error = schema instanceof z.ZodObject ? schema.shape.error : undefined;
  return error instanceof z.ZodEnum ? (error.options as ErrorType[]) : [];
}

/** Response entries for the given error types, one per status, in the `{"error", "info"}` envelope. */
export function errorResponses(...types: ErrorType[]): Record<number, ErrorResponse> {
  const byStatus = new Map<number, ErrorType[]>();
  for (const type of new Set(types)) {
    const status = ERROR_TYPES[type];
    byStatus.set(status, [...(byStatus.get(status) ?? []), type]);
  }
  const responses: Record<number, ErrorResponse> = {};
  for (const [status, list] of byStatus) {
    responses[status] = {
      description: `error: ${list.join(', ')}`,
      content: { 'application/json': { schema: envelope(list) } },
    };
  }
  return responses;
}

/** Adds error types to a route's documented responses, merging with what the route declared for the same status. */
export function addErrorResponses(schema: FastifySchema, types: readonly ErrorType[]): void {
  const response = (schema.response ?? {}) as Record<string, unknown>;
  const declared = Object.values(response).flatMap(typesOf);
  const merged = errorResponses(...declared, ...types);
  for (const [status, entry] of Object.entries(merged)) {
    // A status the route answers in another form (the carrier webhooks' TwiML) keeps that form.
    const existing = response[status];
    if (existing === undefined || typesOf(existing).length > 0) response[status] = entry;
  }
  schema.response = response;
}

/**
 * onRoute hook: documents the errors Fastify itself answers for a route, so no route can forget
 * them: a failed body parse or schema check (400, 413, 415) where the route takes a JSON body or
 * a query, and the 500 of a bug everywhere. Hidden routes and websockets are left alone.
 */
export function documentFrameworkErrors(route: RouteOptions): void {
  const schema = (route.schema ?? {}) as FastifySchema & { hide?: boolean };
  if (schema.hide || (route as { websocket?: boolean }).websocket) return;
  const types: ErrorType[] = ['server-error'];
  if (schema.body) types.push(...BODY_ERRORS);
  if (schema.querystring || schema.params) types.push('invalid-request-error');
  addErrorResponses(schema, types);
  route.schema = schema;
}
