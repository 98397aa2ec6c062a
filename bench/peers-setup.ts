import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { pinnedCommand } from './cpu-pinning.js';
import { freePort } from '../test/helpers/free-port.js';

/**
 * The two Twilio samples `npm run bench:peers` compares Switchboard with: which commit of each, the
 * patch that points its vendor URLs at `switchboard emulate` (bench/peers/*.patch, nothing else
 * changed), how its dependencies are installed, and how it is started. Their sources stay out of
 * this repository; the README ("Cost per call") says how to get them.
 */

export interface PeerDefinition {
  name: 'call-gpt' | 'realtime-sample';
  repo: string;
  /** The commit the patch was made on and the figures were measured at. */
  commit: string;
  patch: string;
  entry: string;
  /** The media-stream websocket path its TwiML points Twilio at. */
  wsPath: string;
  /** Printed once it listens. */
  readyText: string;
  env(vendorsUrl: string, port: number): Record<string, string>;
}

const PATCHES = fileURLToPath(new URL('./peers/', import.meta.url));

export const PEERS: Record<PeerDefinition['name'], PeerDefinition> = {
  'call-gpt': {
    name: 'call-gpt',
    repo: 'https://github.com/twilio-labs/call-gpt',
    commit: 'db0aecda0058f222bfc26ad626d831c365ecfcea',
    patch: join(PATCHES, 'call-gpt.patch'),
    entry: 'app.js',
    wsPath: '/connection',
    readyText: 'Server running on port',
    env: (vendors, port) => ({
      PORT: String(port),
      SERVER: `127.0.0.1:${port}`,
      DEEPGRAM_API_KEY: 'bench',
      // The patch reads this for both the live STT socket (the SDK's global url) and the REST TTS.
      DEEPGRAM_URL: vendors,
      VOICE_MODEL: 'aura-asteria-en',
      OPENAI_API_KEY: 'bench',
      // openai-node reads it as is: no patch needed for the chat completions.
      OPENAI_BASE_URL: `${vendors}/v1`,
    }),
  },
  'realtime-sample': {
    name: 'realtime-sample',
    repo: 'https://github.com/twilio-samples/speech-assistant-openai-realtime-api-node',
    commit: 'e0b6f632ec1e61dfbe15d2acbffdeb574d3b527f',
    patch: join(PATCHES, 'speech-assistant-openai-realtime-api-node.patch'),
    entry: 'index.js',
    wsPath: '/media-stream',
    readyText: 'Server is listening',
    env: (vendors, port) => ({
      PORT: String(port),
      OPENAI_API_KEY: 'bench',
      OPENAI_REALTIME_URL: vendors.replace(/^http/, 'ws'),
    }),
  },
};

function git(dir: string, args: string[]): string {
  return execFileSync('git', ['-C', dir, ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();
}

/**
 * Checks the checkout, applies the patch unless it already is, and installs the peer's
 * dependencies: `npm ci` from its own lock file when it has one, else `npm install` without
 * writing one (the realtime sample ships none). Returns what to print about it.
 */
export function preparePeer(peer: PeerDefinition, dir: string, reinstall: boolean): string {
  if (!existsSync(join(dir, peer.entry))) throw new Error(`${peer.name}: ${dir} holds no ${peer.entry}`);
  const head = git(dir, ['rev-parse', 'HEAD']);
  const notes: string[] = [`${peer.name} at ${head.slice(0, 12)}`];
  if (head !== peer.commit) notes.push(`(the figures in the README are of ${peer.commit.slice(0, 12)})`);
  let applied = false;
  try {
    git(dir, ['apply', '--reverse', '--check', peer.patch]);
    applied = true;
  } catch {
    git(dir, ['apply', peer.patch]);
  }
  notes.push(applied ? 'patch already applied' : 'patch applied');
  if (reinstall || !existsSync(join(dir, 'node_modules'))) {
    const locked = existsSync(join(dir, 'package-lock.json'));
    const args = locked
      ? ['ci', '--omit=dev', '--no-audit', '--no-fund']
      : ['install', '--omit=dev', '--no-audit', '--no-fund', '--no-package-lock'];
    execFileSync('npm', args, { cwd: dir, stdio: ['ignore', 'ignore', 'inherit'] });
    notes.push(locked ? 'npm ci from its lock file' : 'npm install (it ships no lock file)');
  }
  return notes.join(', ');
}

export interface PeerProcess {
  pid: number;
  port: number;
  wsUrl: string;
  stop(): Promise<void>;
}

/** Starts the peer (`node <entry>` in its checkout, on `cpus`) and resolves once it listens. */
export async function startPeer(
  peer: PeerDefinition,
  dir: string,
  vendorsUrl: string,
  cpus: string | undefined,
): Promise<PeerProcess> {
  const port = await freePort();
  const [command, args] = pinnedCommand(cpus, [peer.entry]);
  const child: ChildProcess = spawn(command, args, {
    cwd: dir,
    env: {
      PATH: process.env.PATH ?? '',
      // Options for node in the sample (a profile: --perf-basic-prof), as --sb-node-args are for ours.
      ...(process.env.PEER_NODE_OPTIONS ? { NODE_OPTIONS: process.env.PEER_NODE_OPTIONS } : {}),
      ...peer.env(vendorsUrl, port),
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  // The samples log to the console per event; reading it is part of their cost, as in production.
  const keep = (chunk: Buffer) => {
    if (output.length < 20_000) output += chunk.toString();
  };
  child.stderr!.on('data', keep);
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${peer.name} did not start:\n${output}`)), 30_000);
    child.stdout!.on('data', (chunk: Buffer) => {
      keep(chunk);
      if (output.includes(peer.readyText)) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${peer.name} exited with ${code}:\n${output}`));
    });
  });
  return {
    pid: child.pid!,
    port,
    // A host name, as Twilio would be given: the realtime sample listens on localhost only.
    wsUrl: `ws://localhost:${port}${peer.wsPath}`,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        await once(child, 'exit');
      }
    },
  };
}

/** Resident memory of a process, from /proc (the samples have no /metrics). */
export function rssBytes(pid: number): number {
  const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return match ? Number(match[1]) * 1024 : 0;
}

/** CPU seconds (user + system, every thread) a process has used, from /proc. */
export function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100; // USER_HZ
}

/**
 * Connections established to a local port (IPv4 and IPv6), from /proc/net: the calls a server is
 * carrying, whoever the server is. A call the server closed early (or never took) does not count.
 */
export function establishedConnections(port: number): number {
  const hexPort = port.toString(16).toUpperCase().padStart(4, '0');
  let count = 0;
  for (const file of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const fields = line.trim().split(/\s+/);
      // local_address is ADDRESS:PORT in hex; state 01 is ESTABLISHED.
      if (fields[1]?.endsWith(`:${hexPort}`) && fields[3] === '01') count += 1;
    }
  }
  return count;
}
