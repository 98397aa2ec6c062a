import { pino, type Logger } from 'pino';

export type { Logger };

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
    },
    destination,
  );
}
