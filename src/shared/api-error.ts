import type { ZodError } from 'zod';

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
