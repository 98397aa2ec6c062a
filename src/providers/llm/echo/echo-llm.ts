import { setTimeout as sleep } from 'node:timers/promises';
import type { LlmDelta, LlmProvider, LlmRequest, ProviderContext } from '../../types.js';

/**
 * An LLM that needs no account: it answers from the caller's last words. Useful for demos,
 * load tests and checking a deployment's audio path before paying for a model. Tokens are
 * streamed word by word with a small delay so the pipeline sees a realistic stream.
 */
export class EchoLlm implements LlmProvider {
  readonly name = 'echo';

  constructor(private readonly tokenDelayMs = 5) {}

  async *complete(request: LlmRequest, ctx: ProviderContext): AsyncIterable<LlmDelta> {
    const reply = replyFor(request);
    const words = reply.split(/(?<= )/);
    for (const word of words) {
      if (ctx.signal.aborted) return;
      if (this.tokenDelayMs > 0)
        await sleep(this.tokenDelayMs, undefined, { signal: ctx.signal }).catch(() => undefined);
      yield { type: 'text', text: word };
    }
  }
}

function replyFor(request: LlmRequest): string {
  const last = request.messages.at(-1);
  if (last?.role !== 'user') return 'Hello! I am an echo bot. Say something and I will repeat it.';
  const words = last.content.trim();
  if (words.length === 0) return 'Sorry, I did not catch that.';
  return `You said: ${words}`;
}
