/**
 * Global setup of the `postgres` test project (vitest.config.ts): one throwaway cluster for the
 * run; each test app gets a database of its own in it (test-store.ts).
 */
import type { TestProject } from 'vitest/node';
import { findPostgres, startPostgres } from './postgres-server.js';

declare module 'vitest' {
  export interface ProvidedContext {
    postgresAdminUrl: string;
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const lookup = findPostgres();
  if (!lookup.ok) throw new Error(`the postgres project needs PostgreSQL: ${lookup.reason}`);
  const server = await startPostgres(lookup.binaries);
  project.provide('postgresAdminUrl', server.adminUrl);
  return () => server.stop();
}
