import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { moduleDirUrl, packagePath } from './package-files.js';

describe('the package files, from any module', () => {
  it('finds the package root and, from the sources, a worker folder under src/', () => {
    const pkg = JSON.parse(readFileSync(packagePath('package.json'), 'utf8')) as { name: string };
    expect(pkg.name).toBe('switchboard');
    expect(existsSync(packagePath('fixtures', 'audio'))).toBe(true);
    const folder = moduleDirUrl('providers/tts/flite');
    expect(folder.endsWith('/src/providers/tts/flite/')).toBe(true);
    expect(existsSync(fileURLToPath(new URL('./flite-worker.ts', folder)))).toBe(true);
  });
});
