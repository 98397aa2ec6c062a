import { createRequire } from 'node:module';

/** The package version, read once from package.json (one directory above src/ and dist/). */
export const VERSION: string = (createRequire(import.meta.url)('../package.json') as { version: string }).version;
