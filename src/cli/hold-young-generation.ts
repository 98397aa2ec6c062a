import { holdYoungGeneration } from '../young-generation.js';

// main.ts imports this module first, so that it runs before any other module loads: for `serve`,
// loading zod and the server's modules is most of what start-up allocates (young-generation.ts).
if (process.argv[2] === 'serve') holdYoungGeneration();
