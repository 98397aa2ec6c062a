import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { dirname, join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * Every document a source file names is in the repository: a reader of the project alone must
 * find what a comment points at. A reference is a `.md` path (`docs/providers.md`,
 * `../../README.md`) or a bare name (`README.md`, found at the root or in `docs/`); a reference
 * to a numbered section of docs/providers.md must name a section that page has.
 */

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
/** Where the project's code lives (the product, its tests, the benchmark, the build scripts). */
const CODE_DIRS = ['src', 'test', 'bench', 'scripts'];

function codeFiles(dir: string): string[] {
  if (!existsSync(dir)) return [];
  const files: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) files.push(...codeFiles(path));
    else if (/\.(ts|js|mjs)$/.test(entry.name)) files.push(path);
  }
  return files;
}

const files = CODE_DIRS.flatMap((dir) => codeFiles(join(ROOT, dir)));
const named = (file: string) => relative(ROOT, file).split(sep).join('/');

/** The `.md` names in a file's text, as written. */
function documentsNamedIn(text: string): string[] {
  return [...text.matchAll(/(?:\.{1,2}\/|[\w-]+\/)*[\w-]+\.md\b/g)].map((m) => m[0]);
}

function exists(reference: string, file: string): boolean {
  if (reference.startsWith('.')) return existsSync(join(dirname(file), reference));
  if (reference.includes('/')) return existsSync(join(ROOT, reference));
  return existsSync(join(ROOT, reference)) || existsSync(join(ROOT, 'docs', reference));
}

/** Section numbers docs/providers.md has: `## 4.`, `### 5b.`. */
function providerSections(): Set<string> {
  const doc = readFileSync(join(ROOT, 'docs', 'providers.md'), 'utf8');
  return new Set([...doc.matchAll(/^#{2,3} (\d+[a-z]?)\./gm)].map((m) => m[1]!));
}

describe('documents named in the code', () => {
  it('finds the code to check', () => {
    expect(files.length).toBeGreaterThan(100);
  });

  it('every document a source file names exists in the repository', () => {
    const missing = files.flatMap((file) =>
      documentsNamedIn(readFileSync(file, 'utf8'))
        .filter((reference) => !exists(reference, file))
        .map((reference) => `${named(file)} -> ${reference}`),
    );
    expect(missing).toEqual([]);
  });

  it('every section of docs/providers.md a source file names is there', () => {
    const sections = providerSections();
    const missing = files.flatMap((file) =>
      [...readFileSync(file, 'utf8').matchAll(/providers\.md,? sections? (\d+[a-z]?)/g)]
        .filter((m) => !sections.has(m[1]!))
        .map((m) => `${named(file)} -> section ${m[1]}`),
    );
    expect(missing).toEqual([]);
  });
});
