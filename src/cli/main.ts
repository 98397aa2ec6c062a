#!/usr/bin/env node
// First: it acts before the other modules load.
import './hold-young-generation.js';
import { EnvError, loadConfig } from '../config/env.js';
import { KeyMismatchError } from '../security/key-fingerprint.js';
import { StoreError } from '../store/store-error.js';
import { KEY_MISMATCH_EXIT, USAGE_EXIT } from './usage.js';

const USAGE = `usage: switchboard <command> [options]

commands:
  serve [--port N] [--host ADDR]
                                start the server (the rest of its settings from the environment:
                                PORT, HOST, SWITCHBOARD_*; the flags override PORT and HOST)
  keys create [--account NAME] [--name LABEL]
                                create an API key (printed once) for an account, default "default"
  keys list                     list stored API keys (prefix, account, state)
  keys revoke <key-id>          revoke a stored API key
  call (--url URL | --wss URL) [--play FILE ...] [--barge-in-ms N] [--dtmf DIGITS] [--out FILE.wav]
                                place a simulated phone call against a running server and print
                                its timeline and latencies
  loadtest (--server URL --config ID | --wss URL | --url WEBHOOK) [--concurrency N] [--calls N | --duration-s S]
                                many simulated calls at once, with live progress and JSON and HTML
                                reports
  db copy --from DATA_DIR --to postgres://…
                                copy a SQLite store into PostgreSQL
  db rotate-key <secret|link-signing|room-token> [--new-key BASE64]
                                change one of the store's keys, with the nodes running
  emulate [--port N] [--llm-first-token-ms N] ...
                                serve stand-ins for the vendors' APIs on one port, for offline calls
                                and load tests
  help                          show this text

switchboard <command> --help shows each command's options.
`;

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (command === undefined) {
    process.stderr.write(USAGE);
    return USAGE_EXIT;
  }
  if (command === 'help' || command === '--help' || command === '-h') {
    process.stdout.write(USAGE);
    return 0;
  }
  // Each command loads only its own modules: a server does not carry the load tester's or the
  // emulators' code in its memory, nor the load tester the server's.
  switch (command) {
    // V8's young generation is held small from the first import (hold-young-generation.ts) until
    // calls may come (call-parts-warm-up.ts).
    case 'serve':
      return (await import('./serve-command.js')).runServeCommand(rest);
    case 'keys':
      return (await import('./keys.js')).runKeys(rest, () => loadConfig());
    // A phone call, a load test and the emulators work from the outside: no server configuration.
    // They are development tools, loaded only when asked for, so `serve` never loads them.
    case 'call':
      return (await import('./call.js')).runCall(rest);
    case 'emulate':
      return (await import('./emulate.js')).runEmulate(rest);
    case 'loadtest':
      return (await import('./loadtest.js')).runLoadtestCli(rest);
    // Its stores are named on the command line, not by the server's environment.
    case 'db':
      return (await import('./db.js')).runDb(rest);
    default: {
      const what = command.startsWith('-') ? `unknown option "${command}"` : `unknown command "${command}"`;
      process.stderr.write(`switchboard: ${what} (switchboard --help lists the commands)\n`);
      return USAGE_EXIT;
    }
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    if (code !== 0 || process.exitCode === undefined) process.exitCode = code;
  },
  (err: unknown) => {
    if (err instanceof KeyMismatchError) {
      process.stderr.write(`switchboard: ${err.message}\n`);
      process.exitCode = KEY_MISMATCH_EXIT;
      return;
    }
    if (err instanceof EnvError || err instanceof StoreError) process.stderr.write(`switchboard: ${err.message}\n`);
    else process.stderr.write(`switchboard: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exitCode = 1;
  },
);
