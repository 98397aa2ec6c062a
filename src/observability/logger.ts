import { pino, type Logger } from 'pino';

export type { Logger };

interface LoggedRequest {
  method?: string;
  url?: string;
  host?: string;
  ip?: string;
  socket?: { remotePort?: number };
}

/** The request as Fastify's own serializer shows it, with query tokens masked. */
export function serializeRequest(req: LoggedRequest): Record<string, unknown> {
  return {
    method: req.method,
    url: req.url?.replace(/([?&]token=)[^&#]*/gi, '$1[redacted]'),
    host: req.host,
    remoteAddress: req.ip,
    remotePort: req.socket?.remotePort,
  };
}

/**
 * The process logger. Keys and Authorization headers are redacted wherever they appear, as a
 * second line of defence: code should never log them in the first place.
 */
export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  return pino(
    {
      level,
      base: { service: 'switchboard' },
      redact: {
        paths: ['req.headers.authorization', 'headers.authorization', 'api_keys', '*.api_keys', 'apiKey', '*.apiKey'],
        censor: '[redacted]',
      },
      // Request lines keep their path but not a `token=` in the query (room tokens of clients
      // that cannot send them in a subprotocol, such as Pipecat's websocket transport).
      serializers: { req: serializeRequest },
    },
    destination,
  );
}
