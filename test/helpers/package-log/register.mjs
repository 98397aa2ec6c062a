// `node --import ./register.mjs`: every package the process (and its worker threads) loads from
// node_modules is reported on stderr as "package-loaded <name>", in load order.
import { register } from 'node:module';

register(new URL('./hooks.mjs', import.meta.url));
