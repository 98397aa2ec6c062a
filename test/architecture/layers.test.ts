import { readFileSync, readdirSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

/**
 * The layering of `src` as docs/layout.md writes it down: a file imports its own folder and the
 * folders below it, and the server's import graph holds none of the development tools.
 */

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const SRC = join(ROOT, 'src');
/** Files directly in src/: the composition root. */
const ROOT_UNIT = '(root)';
const TOOLS = 'tools';

interface Import {
  /** Path of the imported file, relative to src, with a .ts extension. */
  target: string;
  dynamic: boolean;
}

function sourceFiles(dir: string): string[] {
  const files: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) files.push(...sourceFiles(path));
    else if (entry.name.endsWith('.ts')) files.push(relative(SRC, path).split(sep).join('/'));
  }
  return files;
}

/** Relative imports of a file: static ones (type-only included, they are a dependency too) and `import()`. */
function importsOf(file: string): Import[] {
  const text = readFileSync(join(SRC, file), 'utf8');
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, false, ts.ScriptKind.TS);
  const found: Import[] = [];
  const add = (specifier: string, dynamic: boolean) => {
    if (!specifier.startsWith('.')) return;
    const target = relative(SRC, resolve(SRC, dirname(file), specifier))
      .split(sep)
      .join('/')
      .replace(/\.js$/, '.ts');
    found.push({ target, dynamic });
  };
  const visit = (node: ts.Node) => {
    if (
      (ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) &&
      node.moduleSpecifier &&
      ts.isStringLiteral(node.moduleSpecifier)
    ) {
      add(node.moduleSpecifier.text, false);
    } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) {
      const [argument] = node.arguments;
      if (argument && ts.isStringLiteralLike(argument)) add(argument.text, true);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

function unitOf(file: string): string {
  const slash = file.indexOf('/');
  return slash === -1 ? ROOT_UNIT : file.slice(0, slash);
}

/** The stack from docs/layout.md's first text block, bottom first. */
function layerOrder(): string[] {
  const doc = readFileSync(join(ROOT, 'docs', 'layout.md'), 'utf8');
  const block = /```text\n([\s\S]*?)```/.exec(doc);
  if (!block) throw new Error('docs/layout.md has no ```text block with the layers');
  return block[1]!
    .split('\n')
    .map((line) => line.trim().split(/\s+/)[0]!)
    .filter(Boolean)
    .reverse();
}

const files = sourceFiles(SRC);
const productFiles = files.filter((file) => !file.endsWith('.test.ts'));
const imports = new Map(files.map((file) => [file, importsOf(file)]));

/** Every `file -> folder` import that goes up the stack. */
function upwardImports(order: string[]): string[] {
  const rank = new Map(order.map((unit, i) => [unit, i]));
  const upward = new Set<string>();
  for (const file of productFiles) {
    const from = unitOf(file);
    for (const { target } of imports.get(file)!) {
      const to = unitOf(target);
      if (rank.get(to)! > rank.get(from)!) upward.add(`${file} -> ${to}`);
    }
  }
  return [...upward].sort();
}

/** The files a module loads when it starts: its static imports, followed. */
function staticGraph(entry: string): Set<string> {
  const seen = new Set<string>();
  const pending = [entry];
  while (pending.length > 0) {
    const file = pending.pop()!;
    if (seen.has(file)) continue;
    seen.add(file);
    for (const { target, dynamic } of imports.get(file) ?? []) if (!dynamic) pending.push(target);
  }
  return seen;
}

describe('the layers of src', () => {
  const order = layerOrder();

  it('docs/layout.md places every folder of src, once', () => {
    const units = [...new Set(files.map(unitOf))].sort();
    expect([...order].sort()).toEqual(units);
  });

  it('no file imports a folder above its own', () => {
    expect(upwardImports(order)).toEqual([]);
  });

  it('every import resolves to a file in src', () => {
    const missing = productFiles.flatMap((file) =>
      imports
        .get(file)!
        .filter(({ target }) => !imports.has(target))
        .map(({ target }) => `${file} -> ${target}`),
    );
    expect(missing).toEqual([]);
  });
});

describe('the product apart from its tools', () => {
  it('only the CLI and the tools themselves import the tools', () => {
    const importers = productFiles.filter(
      (file) =>
        ![TOOLS, 'cli'].includes(unitOf(file)) && imports.get(file)!.some(({ target }) => unitOf(target) === TOOLS),
    );
    expect(importers).toEqual([]);
  });

  // cli/main.ts loads every command with import(); `serve` starts from cli/serve-command.ts.
  it.each(['cli/serve-command.ts', 'server.ts', 'app.ts'])('the server graph from %s loads no tool', (entry) => {
    const graph = staticGraph(entry);
    expect(graph.has('server.ts') || entry !== 'cli/serve-command.ts').toBe(true);
    expect([...graph].filter((file) => unitOf(file) === TOOLS)).toEqual([]);
  });
});
