import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';

/**
 * Starts the worker module `name` in the folder `besideUrl` (a URL ending in `/`): the built .js
 * when there is one (dist/), or, from the TypeScript sources (tests, tsx), the .ts file through
 * tsx.
 */
export function startModuleWorker(besideUrl: string, name: string): Worker {
  const compiled = new URL(`./${name}.js`, besideUrl);
  if (existsSync(fileURLToPath(compiled))) return new Worker(compiled);
  const source = new URL(`./${name}.ts`, besideUrl).href;
  const bootstrap = `import('tsx/esm/api').then(({ register }) => { register(); return import(${JSON.stringify(source)}); });`;
  return new Worker(bootstrap, { eval: true });
}
