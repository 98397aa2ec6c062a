import { pino, type Logger } from 'pino';
import { redactUrl } from './redact-url.js';

export type { Logger };

/** The fields of a Fastify request the request log shows. */
interface LoggedRequest {
  method?: string;
  url?: string;
  host?: string;
  ip?: string;
  socket?: { remotePort?: number };
}

/**
 * Fastify's request serializer, with credentials in the query (download-link signatures, room
 * tokens, presigned bucket parameters) redacted: the request log goes out at info level, and
 * those values open a recording or a room to whoever reads it.
 */
function requestSerializer(req: LoggedRequest): Record<string, unknown> {
  return {
    method: req.method,
    url: typeof req.url === 'string' ? redactUrl(req.url) : req.url,
    host: req.host,
    remoteAddress: req.ip,
    remotePort: req.socket?.remotePort,
  };
}

/**
 * The process logger. Keys and Authorization headers are redacted wherever they appear, as a
 * second line of defence: code should never log them in the first place. Any `url` field (a
 * customer's webhook, hold music) gets the same query redaction as the request log.
 */
export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  return pino(
    {
      level,
      base: { service: 'switchboard' },
      serializers: {
        req: requestSerializer,
        url: (url: unknown) => (typeof url === 'string' ? redactUrl(url) : url),
      },
      redact: {
        paths: ['req.headers.authorization', 'headers.authorization', 'api_keys', '*.api_keys', 'apiKey', '*.apiKey'],
        censor: '[redacted]',
      },
    },
    destination,
  );
}
