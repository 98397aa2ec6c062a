#!/usr/bin/env node
import { EnvError, loadConfig } from '../config/env.js';
import { StoreError } from '../store/store-error.js';
import { runCall } from './call.js';
import { runDb } from './db.js';
import { runEmulate } from './emulate.js';
import { runKeys } from './keys.js';
import { runLoadtestCli } from './loadtest.js';
import { runServe } from './serve.js';

const USAGE = `usage: switchboard <command> [options]

commands:
  serve                         start the server (PORT, HOST, SWITCHBOARD_* from the environment)
  keys create [--account NAME] [--name LABEL]
                                create an API key (printed once) for an account, default "default"
  keys list                     list stored API keys (prefix, account, state)
  keys revoke <key-id>          revoke a stored API key
  call (--url URL | --wss URL) [--play FILE ...] [--barge-in-ms N] [--dtmf DIGITS] [--out FILE.wav]
                                place a simulated phone call against a running server and print
                                its timeline and latencies (switchboard call --help for more)
  loadtest (--server URL --config ID | --wss URL | --url WEBHOOK) [--concurrency N] [--calls N | --duration-s S]
                                many simulated calls at once, with live progress and JSON and HTML
                                reports (switchboard loadtest --help for more)
  db copy --from DATA_DIR --to postgres://…
                                copy a SQLite store into PostgreSQL (switchboard db --help for more)
  emulate [--port N] [--llm-first-token-ms N] ...
                                serve stand-ins for the vendors' APIs on one port, for offline calls
                                and load tests (switchboard emulate --help for more)
  help                          show this text
`;

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (command === undefined || command === 'help' || command === '--help' || command === '-h') {
    process.stdout.write(USAGE);
    return command === undefined ? 1 : 0;
  }
  // A phone call is placed from the outside: it needs no server configuration.
  if (command === 'call') return runCall(rest);
  if (command === 'emulate') return runEmulate(rest);
  if (command === 'loadtest') return runLoadtestCli(rest);
  // Its stores are named on the command line, not by the server's environment.
  if (command === 'db') return runDb(rest);
  const config = loadConfig();
  switch (command) {
    case 'serve':
      return runServe(config);
    case 'keys':
      return runKeys(config, rest);
    default:
      process.stderr.write(`switchboard: unknown command "${command}"\n\n${USAGE}`);
      return 2;
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    if (code !== 0 || process.exitCode === undefined) process.exitCode = code;
  },
  (err: unknown) => {
    if (err instanceof EnvError || err instanceof StoreError) process.stderr.write(`switchboard: ${err.message}\n`);
    else process.stderr.write(`switchboard: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exitCode = 1;
  },
);
