import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll } from 'vitest';
import { parseWav } from '../../src/audio/wav.js';
import { requireBuilt } from './built-cli.js';
import { freePort } from './free-port.js';
import { type ShellBlock, checkoutLookalike, runScript, shellBlocks, substitute } from './readme-blocks.js';
import { TEST_KEY, removeDir, tempDataDir } from './test-data.js';

/**
 * The README's walk-throughs, run as printed (`readme-walkthroughs.test.ts` and
 * `readme-dial-walkthroughs.test.ts`): each is pasted into bash in a copy of the checkout, with
 * only the ports (8080, 9090, 3000 may be busy here) and the API key placeholder replaced.
 */

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const README = readFileSync(join(ROOT, 'README.md'), 'utf8');
export const BLOCKS = shellBlocks(README);
export const SCRIPT_TIMEOUT_MS = 150_000;

function blocksIn(section: string): ShellBlock[] {
  const found = BLOCKS.filter((b) => b.section === section);
  if (found.length === 0) throw new Error(`the README has no sh block under "${section}"`);
  return found;
}

/** The one block of a section (a section with several is named by index). */
export function block(section: string, index = 0): ShellBlock {
  const found = blocksIn(section)[index];
  if (!found) throw new Error(`the README has no sh block ${index} under "${section}"`);
  return found;
}

export const QUICK_START = 'Quick start';
export const OFFLINE = 'A whole call, offline';
export const ROOMS = 'Rooms: a bot in the browser';
export const RECORDINGS = 'Call recordings';
export const CALL_RECORDS = 'Call records';
export const DIAL_IN = 'Try it with no carrier account';
export const DIAL_OUT = 'Dial-out';
export const LOADTEST = 'Load testing and the benchmark';
export const BOOKING = 'Try it: a bot that books a table';

/**
 * A walk-through test file's set-up: `npm start` and `npx switchboard` run the built server (the
 * project's global setup built dist/ before the first test file started, test/helpers/built-cli.ts),
 * and each run's checkout copy and data dir are removed after the file. Returns `follow`.
 */
export function readmeWalkthroughs(): (parts: string[], awaitOutput?: RegExp) => ReturnType<typeof follow> {
  const dirs: string[] = [];
  beforeAll(() => requireBuilt());
  afterAll(() => {
    for (const dir of dirs.splice(0)) removeDir(dir);
  });
  return (parts, awaitOutput) => follow(dirs, parts, awaitOutput);
}

/** Runs README blocks in one shell, as one reader following them in order on a fresh machine. */
async function follow(dirs: string[], parts: string[], awaitOutput?: RegExp) {
  // A checkout of its own: the walk-throughs run at the same time and write files (bot.wav) there.
  const cwd = checkoutLookalike(ROOT);
  dirs.push(cwd);
  const ports = { 8080: await freePort(), 9090: await freePort(), 3000: await freePort() };
  const dataDir = tempDataDir();
  dirs.push(dataDir);
  const script = parts.map((part) => substitute(part, { ports, apiKey: TEST_KEY })).join('\n');
  const run = await runScript(script, {
    cwd,
    timeoutMs: SCRIPT_TIMEOUT_MS,
    awaitOutput,
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '',
      // The server's port and store: what the reader's machine has by default, moved aside.
      PORT: String(ports[8080]),
      SWITCHBOARD_DATA_DIR: dataDir,
      SWITCHBOARD_API_KEY: TEST_KEY,
    },
  });
  return { ...run, ports, script, cwd };
}

/**
 * The quick start's first command after `npm ci` (which CI has run), as if in a second terminal:
 * in its own process group, so the reader's Ctrl-C (`stopQuickStartServer`) reaches the server.
 */
export function quickStartServer(port: string): string {
  const serve = block(QUICK_START).text.split('\n')[0]!;
  const match = /^npm ci && (npm start)\b/.exec(serve);
  if (!match) throw new Error(`the quick start's first line is not "npm ci && npm start": ${serve}`);
  return [
    `set -m; ${match[1]} & QUICK_START=$!; set +m`,
    `trap 'kill -INT -- -$QUICK_START 2>/dev/null' EXIT`,
    `until curl -sf localhost:${port}/healthz >/dev/null; do sleep 0.2; done`,
  ].join('\n');
}

export const stopQuickStartServer = 'kill -INT -- -$QUICK_START; wait $QUICK_START || true';

/** Log lines at error level or worse: a walk-through as printed must not produce any. */
export function errorLogLines(output: string): string[] {
  return output.split('\n').filter((line) => /^\{"level":(50|60)\b/.test(line));
}

export function isWav(path: string): boolean {
  return (
    existsSync(path) && statSync(path).size > 44 && readFileSync(path).subarray(0, 4).toString('latin1') === 'RIFF'
  );
}

/** Seconds of loud samples in a WAV file: what a listener hears of the voice, not the silence. */
export function loudSeconds(path: string): number {
  const wav = parseWav(new Uint8Array(readFileSync(path)));
  let loud = 0;
  for (const sample of wav.samples) if (Math.abs(sample) > 1000) loud += 1;
  return loud / wav.sampleRateHz;
}

export function explain(run: { code: number | null; output: string; script: string }): string {
  return `script:\n${run.script}\n\nexit ${run.code}, output:\n${run.output}`;
}
