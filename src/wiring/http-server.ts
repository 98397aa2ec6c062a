import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import type { AppConfig } from '../config/env.js';
import { errorHandler, sendError, toApiError } from '../http/errors.js';
import { zodSerializerCompiler, zodValidatorCompiler } from '../http/zod-compilers.js';
import type { Logger } from '../observability/logger.js';
import { ApiError } from '../shared/api-error.js';

/** Longest path parameter the router passes to a route; longer ones are a 400. */
const MAX_PATH_PARAM_CHARS = 256;

/**
 * The Fastify instance with the API's conventions and no routes: zod schemas run every route's
 * validation (errors in the API's envelope) and check its answers, and every error, the
 * router's own included, is answered in that envelope.
 */
export function createHttpServer(config: AppConfig, log: Logger): FastifyInstance {
  const app = Fastify({
    // Fastify types its logger more narrowly than pino; the instance is the process's pino logger.
    loggerInstance: log as FastifyBaseLogger,
    bodyLimit: config.bodyLimitBytes,
    return503OnClosing: true,
    // Ids longer than this never reach a route's schema (which allows 128); the router refuses them.
    routerOptions: { maxParamLength: MAX_PATH_PARAM_CHARS },
    // Errors the router raises before any route runs (a malformed URL, an over-long path parameter)
    // get the same envelope as every other error.
    frameworkErrors: (error, _request, reply) => sendError(reply, toApiError(error)),
  });
  app.setValidatorCompiler(zodValidatorCompiler);
  app.setSerializerCompiler(zodSerializerCompiler);
  app.setErrorHandler(errorHandler);
  app.setNotFoundHandler((request, reply) =>
    sendError(reply, new ApiError('not-found', `no route ${request.method} ${request.url.split('?')[0]}`)),
  );
  return app;
}
