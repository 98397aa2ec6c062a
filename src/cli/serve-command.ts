import { type AppConfig, loadConfig } from '../config/env.js';
import { runServe } from './serve.js';
import { USAGE_EXIT, UsageError, listenFailure, parseCommandLine, portOption, usageLine } from './usage.js';

const HELP = `usage: switchboard serve [--port N] [--host ADDR]

Starts the server: the HTTP API, the carrier's webhooks and media websockets, rooms. Everything
else comes from the environment (SWITCHBOARD_*, see the README); the flags override PORT and HOST.

options:
  --port <n>      listen port (default $PORT, else 8080; 0 picks a free one)
  --host <addr>   listen address (default $HOST, else 0.0.0.0)
  -h, --help      show this text

On SIGTERM or SIGINT it drains: new calls are refused and /healthz answers 503, live calls go on
for up to SWITCHBOARD_DRAIN_TIMEOUT_SECS, then the bot says goodbye; a second signal ends them at
once. Recordings are finished and the store closed before it exits.
`;

export interface ServeIo {
  stdout: { write(text: string): unknown };
  stderr: { write(text: string): unknown };
}

/** PORT and HOST as the flags set them, to lay over the environment's. */
function parseServeArgs(argv: string[]): 'help' | Record<string, string> {
  const { values } = parseCommandLine({
    args: argv,
    strict: true,
    allowPositionals: false,
    options: { port: { type: 'string' }, host: { type: 'string' }, help: { type: 'boolean', short: 'h' } },
  });
  if (values.help) return 'help';
  const overrides: Record<string, string> = {};
  if (values.port !== undefined) overrides.PORT = String(portOption(values.port));
  if (values.host !== undefined) {
    if (values.host.trim() === '') throw new UsageError('--host needs an address, e.g. 127.0.0.1 or 0.0.0.0');
    overrides.HOST = values.host;
  }
  return overrides;
}

/**
 * `switchboard serve [--port N] [--host ADDR]`: the command line, then the server (serve.ts) on
 * the environment's configuration with the flags laid over it. An address that cannot be
 * listened on is one line and exit 1, not a stack trace.
 */
export async function runServeCommand(argv: string[], io: ServeIo = process): Promise<number> {
  let overrides: 'help' | Record<string, string>;
  try {
    overrides = parseServeArgs(argv);
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    io.stderr.write(usageLine('serve', err.message));
    return USAGE_EXIT;
  }
  if (overrides === 'help') {
    io.stdout.write(HELP);
    return 0;
  }
  const config: AppConfig = loadConfig({ ...process.env, ...overrides });
  try {
    return await runServe(config);
  } catch (err) {
    const why = listenFailure(err, config.host, config.port);
    if (why === undefined) throw err;
    io.stderr.write(`switchboard serve: ${why}\n`);
    return 1;
  }
}
