import { readFileSync } from 'node:fs';
import { packagePath } from './shared/package-files.js';

/** The package version, read once from package.json. */
export const VERSION: string = (JSON.parse(readFileSync(packagePath('package.json'), 'utf8')) as { version: string })
  .version;
