// Module resolution hooks for register.mjs.
import { reportPackage } from './report.mjs';

export async function resolve(specifier, context, nextResolve) {
  const resolved = await nextResolve(specifier, context);
  const match = /\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(resolved.url);
  if (match) reportPackage(match[1]);
  return resolved;
}
