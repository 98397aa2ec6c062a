// `node --import ./register.mjs`: every package the process (and its worker threads) loads from
// node_modules is reported on stderr as "package-loaded <name>", in load order: imported (the
// resolve hook in hooks.mjs) or required, from CommonJS or through createRequire (below).
import Module, { isBuiltin, register } from 'node:module';
import { reportPackage } from './report.mjs';

register(new URL('./hooks.mjs', import.meta.url));

const originalRequire = Module.prototype.require;
Module.prototype.require = function require(id, ...rest) {
  if (typeof id === 'string' && !isBuiltin(id) && !/^[./]/.test(id)) {
    const name = /^(?:@[^/]+\/)?[^/]+/.exec(id)?.[0];
    if (name) reportPackage(name);
  }
  return originalRequire.call(this, id, ...rest);
};
