import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readdirSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A fenced ```sh block of the README, with the section it sits in. */
export interface ShellBlock {
  /** The nearest heading above the block, without its #s. */
  section: string;
  /** 1-based line of the opening fence, for messages. */
  line: number;
  text: string;
}

/** Every ```sh block of a Markdown document, in order. */
export function shellBlocks(markdown: string): ShellBlock[] {
  const blocks: ShellBlock[] = [];
  const lines = markdown.split('\n');
  let section = '';
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    const heading = /^#+\s+(.*)$/.exec(line);
    if (heading) section = heading[1]!.trim();
    if (!line.startsWith('```')) continue;
    if (line.trim() !== '```sh') {
      // Another language's block: step over it, so its comment lines are not taken for headings.
      for (i++; i < lines.length && !lines[i]!.startsWith('```'); i++);
      continue;
    }
    const start = i;
    const body: string[] = [];
    for (i++; i < lines.length && lines[i]!.trim() !== '```'; i++) body.push(lines[i]!);
    blocks.push({ section, line: start + 1, text: body.join('\n') });
  }
  return blocks;
}

/** What the test may change in a block: the ports the README names and the API key it shows. */
export interface Substitutions {
  /** README port → port to use instead (the README's 8080, 9090, 3000 may be busy here). */
  ports: Record<number, number>;
  /** Replaces the README's `KEY=sb_…` placeholder line. */
  apiKey: string;
}

/** The block as printed, with only its ports and the API key placeholder replaced. */
export function substitute(text: string, { ports, apiKey }: Substitutions): string {
  const portPattern = new RegExp(`\\b(${Object.keys(ports).join('|')})\\b`, 'g');
  return text.replace(/^KEY=sb_…/gm, `KEY=${apiKey}`).replace(portPattern, (port) => String(ports[Number(port)]));
}

/**
 * A directory that looks like the checkout (every top-level entry linked), so the README's
 * relative paths work while the files a walk-through writes (bot.wav, call.wav, reports) stay out
 * of the real checkout.
 */
export function checkoutLookalike(root: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'switchboard-readme-'));
  for (const entry of readdirSync(root)) {
    if (entry === 'data' || entry === '.git') continue;
    symlinkSync(join(root, entry), join(dir, entry));
  }
  return dir;
}

export interface ScriptRun {
  code: number | null;
  output: string;
}

/**
 * Runs a shell script the way a reader pastes it into a terminal (bash, in `cwd`), in its own
 * process group so whatever it started in the background is stopped with it.
 */
export async function runScript(
  script: string,
  options: {
    cwd: string;
    env: Record<string, string>;
    timeoutMs: number /** Keep the background jobs until their output matches. */;
    awaitOutput?: RegExp;
  },
): Promise<ScriptRun> {
  const child: ChildProcess = spawn('bash', ['-c', script], {
    cwd: options.cwd,
    env: options.env,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  // One deadline for the script and the output awaited after it, so a run that never prints what
  // is awaited still returns its output (for the failure message) before the test's own timeout.
  const deadlineMs = Date.now() + options.timeoutMs;
  const timer = setTimeout(() => killGroup(child), options.timeoutMs);
  const [code] = (await once(child, 'exit')) as [number | null];
  while (options.awaitOutput && !options.awaitOutput.test(output) && Date.now() < deadlineMs) {
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  clearTimeout(timer);
  // The script's background jobs (servers, emulators, receivers) share its process group.
  killGroup(child);
  return { code, output };
}

function killGroup(child: ChildProcess): void {
  try {
    process.kill(-child.pid!, 'SIGKILL');
  } catch {
    // Already gone.
  }
}
