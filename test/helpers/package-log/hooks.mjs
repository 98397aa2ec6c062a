// Module resolution hooks for register.mjs.
const reported = new Set();

export async function resolve(specifier, context, nextResolve) {
  const resolved = await nextResolve(specifier, context);
  const match = /\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(resolved.url);
  if (match && !reported.has(match[1])) {
    reported.add(match[1]);
    process.stderr.write(`package-loaded ${match[1]}\n`);
  }
  return resolved;
}
