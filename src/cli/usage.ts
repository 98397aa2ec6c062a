import { type ParseArgsConfig, parseArgs } from 'node:util';

/** A mistake in the command line: reported as one line, exit status 2. */
export class UsageError extends Error {}

/** Exit status for misuse of the command line. */
export const USAGE_EXIT = 2;

/** Exit status of a node (or `db rotate-key`) whose key is not the one its store uses (security/key-fingerprint.ts). */
export const KEY_MISMATCH_EXIT = 3;

/**
 * `parseArgs` of node:util with its errors as one-line UsageErrors: "Unknown option '--bogus'",
 * "Option '--port <value>' argument missing", "Unexpected argument 'x'" (the first sentence of
 * Node's message; the rest is advice about `--` that does not fit here).
 */
export function parseCommandLine<T extends ParseArgsConfig>(config: T): ReturnType<typeof parseArgs<T>> {
  try {
    return parseArgs(config);
  } catch (err) {
    const code = (err as { code?: unknown }).code;
    if (typeof code === 'string' && code.startsWith('ERR_PARSE_ARGS_') && err instanceof Error) {
      throw new UsageError(err.message.split('. ')[0]!);
    }
    throw err;
  }
}

/** The one line printed for a UsageError: what was wrong and where the help is. */
export function usageLine(command: string, message: string): string {
  return `switchboard ${command}: ${message} (switchboard ${command} --help shows the usage)\n`;
}

/** A `--port` value: a whole number from 0 (any free port) to 65535. */
export function portOption(raw: string): number {
  const port = Number(raw);
  if (!/^\d+$/.test(raw) || port > 65_535)
    throw new UsageError(`--port must be a whole number from 0 to 65535, got "${raw}"`);
  return port;
}

/** Why a server could not listen, in one line; undefined for errors that are not about the address. */
export function listenFailure(err: unknown, host: string, port: number): string | undefined {
  switch ((err as { code?: unknown } | null)?.code) {
    case 'EADDRINUSE':
      return `port ${port} is already in use on ${host}; stop what holds it or choose another with --port`;
    case 'EACCES':
      return `no permission to listen on port ${port} (ports below 1024 need privileges); choose another with --port`;
    case 'EADDRNOTAVAIL':
      return `cannot listen on ${host}: it is not an address of this machine; choose another with --host`;
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return `cannot listen on ${host}: no such host name; choose another with --host`;
    default:
      return undefined;
  }
}
