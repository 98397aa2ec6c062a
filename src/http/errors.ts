import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { ZodError } from 'zod';

/**
 * The one registry of API error types, in the hosted service's shape
 * `{"error": "<type>", "info": "<text>"}`, with the HTTP status each type answers with.
 */
export const ERROR_TYPES = {
  'authorization-header-error': 400,
  'authentication-error': 401,
  'forbidden-error': 403,
  'json-parsing-error': 400,
  'invalid-request-error': 400,
  'not-found': 404,
  'method-not-allowed': 405,
  /** The resource is held by someone else (a phone number another account bought). */
  'conflict-error': 409,
  'payload-too-large': 413,
  'unsupported-media-type': 415,
  'rate-limit-error': 429,
  'server-error': 500,
  /** The carrier (Twilio) refused or failed; `info` carries its words. */
  'carrier-error': 502,
  'service-unavailable': 503,
} as const;

export type ErrorType = keyof typeof ERROR_TYPES;

export interface ErrorBody {
  error: ErrorType;
  info?: string;
}

export class ApiError extends Error {
  readonly status: number;
  constructor(
    readonly type: ErrorType,
    readonly info?: string,
    status?: number,
  ) {
    super(info ?? type);
    this.status = status ?? ERROR_TYPES[type];
  }

  body(): ErrorBody {
    return this.info === undefined ? { error: this.type } : { error: this.type, info: this.info };
  }
}

/** "config.0.options.1.value.stop_secs: expected number" for each issue, joined with "; ". */
export function describeZodError(error: ZodError, root = 'body'): string {
  return error.issues
    .map((issue) => {
      const path = issue.path.length > 0 ? issue.path.map(String).join('.') : root;
      return `${path}: ${issue.message}`;
    })
    .join('; ');
}

export function validationError(error: ZodError, root = 'body'): ApiError {
  return new ApiError('invalid-request-error', describeZodError(error, root));
}

/** The 413 a client can act on: it names the limit. */
function bodyTooLarge(bodyLimitBytes: number | undefined): ApiError {
  return new ApiError('payload-too-large', bodyLimitBytes === undefined ? 'the request body is larger than the limit' : `the request body exceeds ${bodyLimitBytes} bytes`);
}

/**
 * Maps Fastify's own errors (body parsing, limits, content types) onto the registry;
 * `bodyLimitBytes` is the route's limit, named in a 413.
 */
export function toApiError(error: FastifyError | Error, bodyLimitBytes?: number): ApiError {
  if (error instanceof ApiError) return error;
  if (error instanceof ZodError) return validationError(error, 'request');
  const code = (error as FastifyError).code;
  switch (code) {
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new ApiError('json-parsing-error', 'the request body is not valid JSON');
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return bodyTooLarge(bodyLimitBytes);
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new ApiError('unsupported-media-type', 'send the body as application/json');
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new ApiError('invalid-request-error', 'the Content-Length header does not match the body');
    case 'FST_ERR_VALIDATION':
      return new ApiError('invalid-request-error', error.message);
  }
  if (error instanceof SyntaxError) return new ApiError('json-parsing-error', 'the request body is not valid JSON');
  const status = (error as FastifyError).statusCode;
  if (status === 413) return bodyTooLarge(bodyLimitBytes);
  if (status === 415) return new ApiError('unsupported-media-type', 'unsupported content type');
  if (status !== undefined && status >= 400 && status < 500) return new ApiError('invalid-request-error', error.message, status);
  return new ApiError('server-error', 'internal error');
}

export function sendError(reply: FastifyReply, error: ApiError): FastifyReply {
  return reply.status(error.status).type('application/json; charset=utf-8').send(error.body());
}

export function errorHandler(error: FastifyError, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  const apiError = toApiError(error, request.routeOptions.bodyLimit);
  if (apiError.status >= 500) request.log.error({ err: error }, 'request failed');
  else request.log.debug({ errorType: apiError.type }, 'request rejected');
  return sendError(reply, apiError);
}
