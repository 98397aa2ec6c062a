import { EchoLlm } from './echo-llm.js';

export { EchoLlm } from './echo-llm.js';

/** Builds the `echo` LLM, which needs no account and takes no options. */
export function createEchoLlm(): EchoLlm {
  return new EchoLlm();
}
