import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ApiError, ERROR_TYPES, describeZodError } from '../shared/api-error.js';
import { toApiError } from './errors.js';

function fastifyError(code: string, statusCode?: number): Error {
  return Object.assign(new Error(code), { code, statusCode });
}

describe('error mapping', () => {
  it('maps Fastify body errors onto the registry', () => {
    expect(toApiError(fastifyError('FST_ERR_CTP_INVALID_JSON_BODY', 400)).body().error).toBe('json-parsing-error');
    expect(toApiError(fastifyError('FST_ERR_CTP_EMPTY_JSON_BODY', 400)).body().error).toBe('json-parsing-error');
    expect(toApiError(fastifyError('FST_ERR_CTP_BODY_TOO_LARGE', 413)).status).toBe(413);
    expect(toApiError(fastifyError('FST_ERR_CTP_INVALID_MEDIA_TYPE', 415)).body().error).toBe('unsupported-media-type');
    expect(toApiError(fastifyError('SOMETHING_ELSE', 404)).status).toBe(404);
  });

  it('hides internal errors behind server-error', () => {
    const mapped = toApiError(new Error('database exploded at /secret/path'));
    expect(mapped.status).toBe(500);
    expect(mapped.body()).toEqual({ error: 'server-error', info: 'internal error' });
  });

  it('keeps ApiErrors and their status', () => {
    const err = new ApiError('not-found', 'no such thing');
    expect(toApiError(err)).toBe(err);
    expect(err.status).toBe(ERROR_TYPES['not-found']);
    expect(new ApiError('authentication-error').body()).toEqual({ error: 'authentication-error' });
  });

  it('names field paths of validation errors', () => {
    const schema = z.object({ a: z.object({ b: z.array(z.number()) }) });
    const result = schema.safeParse({ a: { b: [1, 'x'] } });
    expect(result.success).toBe(false);
    expect(describeZodError(result.error!)).toMatch(/^a\.b\.1: /);
    expect(toApiError(result.error!).body().error).toBe('invalid-request-error');
  });
});
