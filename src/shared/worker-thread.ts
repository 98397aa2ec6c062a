import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';

/**
 * Starts the worker module `name` in the folder `besideUrl` (a URL ending in `/`): the built .js
 * when there is one (dist/), or, from the TypeScript sources (tests, tsx), the .ts file through
 * tsx's loader, registered in the thread. `workerData` is handed to the thread as it starts.
 */
export function startModuleWorker(besideUrl: string, name: string, workerData?: unknown): Worker {
  const compiled = new URL(`./${name}.js`, besideUrl);
  if (existsSync(fileURLToPath(compiled))) return new Worker(compiled, { workerData });
  const source = new URL(`./${name}.ts`, besideUrl).href;
  // Resolved here, from this file, as the thread's eval'd code would resolve it from the working
  // directory. Under vitest import.meta.resolve is missing, but vitest runs from the project root.
  const tsxApi = typeof import.meta.resolve === 'function' ? import.meta.resolve('tsx/esm/api') : 'tsx/esm/api';
  const bootstrap = `import(${JSON.stringify(tsxApi)}).then(({ register }) => { register(); return import(${JSON.stringify(source)}); });`;
  return new Worker(bootstrap, { eval: true, workerData });
}
