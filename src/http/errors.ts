import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { ZodError } from 'zod';
import { ApiError, validationError } from '../shared/api-error.js';

/** The 413 a client can act on: it names the limit. */
function bodyTooLarge(bodyLimitBytes: number | undefined): ApiError {
  return new ApiError(
    'payload-too-large',
    bodyLimitBytes === undefined
      ? 'the request body is larger than the limit'
      : `the request body exceeds ${bodyLimitBytes} bytes`,
  );
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
    case 'FST_ERR_BAD_URL':
      return new ApiError('invalid-request-error', 'the request URL is malformed');
    case 'FST_ERR_MAX_PARAM_LENGTH':
      return new ApiError('invalid-request-error', 'a path parameter is longer than the server accepts');
    case 'FST_ERR_VALIDATION':
      return new ApiError('invalid-request-error', error.message);
  }
  if (error instanceof SyntaxError) return new ApiError('json-parsing-error', 'the request body is not valid JSON');
  const status = (error as FastifyError).statusCode;
  if (status === 413) return bodyTooLarge(bodyLimitBytes);
  if (status === 415) return new ApiError('unsupported-media-type', 'unsupported content type');
  if (status !== undefined && status >= 400 && status < 500)
    return new ApiError('invalid-request-error', error.message, status);
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
