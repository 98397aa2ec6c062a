// One "package-loaded <name>" line per package and thread.
const reported = new Set();

export function reportPackage(name) {
  if (reported.has(name)) return;
  reported.add(name);
  process.stderr.write(`package-loaded ${name}\n`);
}
