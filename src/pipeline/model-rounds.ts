import type { Logger } from 'pino';
import type { LlmMessage, LlmProvider, LlmToolCall, ProviderContext } from '../providers/types.js';
import type { CallEvents } from './call-deps.js';
import { elapsedSince } from './call-metrics.js';
import type { CallTools, RunningTool } from './call-tools.js';
import type { Conversation } from './conversation.js';
import type { Reply } from './reply.js';
import { mayRetry, retryDelay } from './retry.js';
import { SentenceSplitter } from './sentence-splitter.js';
import { type ToolAction, errorResult } from './tool-types.js';

/** A function that has not answered after this long gets the filler phrase (once per reply), ms. */
export const FILLER_AFTER_MS = 1000;
/** The filler phrase when the function has no `say` of its own. */
export const DEFAULT_FILLER = 'One moment, please.';
/** What a function's `tool` message holds until its result arrives (a reply cut while it runs is sent on with it). */
export const PENDING_RESULT_JSON = JSON.stringify({
  status: 'running',
  note: 'The function is still running; its result is not in yet.',
});
/** Said when `end_call` ended the answer and the model wrote no goodbye of its own. */
export const END_CALL_GOODBYE = 'Thank you for calling, goodbye!';

export interface ModelRoundsParts {
  llm: LlmProvider;
  conversation: Conversation;
  tools: CallTools;
  /** Passes with function calls one reply may make; further calls are answered with an error. */
  maxRounds: number;
  events?: CallEvents;
  log: () => Logger;
  /** A streaming webhook asked to end the call: it ends once this reply has played. */
  onEndCallAction(reply: Reply): void;
}

/**
 * The text of one answer, for the voice, sentence by sentence: the model runs on the context; when
 * it calls functions they run concurrently (each tool_call_id once), the caller hears a filler if
 * they are slow, and the model runs once more with every result in the context; up to
 * `maxRounds` times. Interrupting the reply stops the model and the voice, not a function already
 * sent (unless it cancels on interruption): its result enters the context when it arrives.
 */
export async function* modelRounds(
  parts: ModelRoundsParts,
  reply: Reply,
  ctx: ProviderContext,
  history: LlmMessage[],
): AsyncGenerator<string> {
  const splitter = new SentenceSplitter();
  const filler = { said: false };
  let messages = history;
  let wrote = false;
  for (let round = 0; ; round++) {
    const calls: LlmToolCall[] = [];
    for await (const piece of modelPass(parts, reply, ctx, messages, splitter, calls)) {
      wrote = true;
      yield piece;
    }
    if (ctx.signal.aborted) return;
    const rest = splitter.flush();
    if (rest) {
      wrote = true;
      parts.events?.onBotText?.(rest);
      yield rest;
    }
    if (calls.length === 0) {
      // end_call in an answer that said nothing at all: the caller still hears goodbye.
      if (!wrote && reply.endsCall) yield* say(parts, END_CALL_GOODBYE);
      return;
    }
    parts.conversation.addToolCalls(calls, PENDING_RESULT_JSON);
    if (round >= parts.maxRounds) {
      // A model calling functions in a loop: tell it to answer, and stop if it still will not.
      parts.log().warn({ round, maxRounds: parts.maxRounds }, 'function-call rounds limit reached for this answer');
      const limit = errorResult(
        'error',
        'Too many function calls for one answer: answer the caller now without calling functions.',
      );
      for (const call of calls) parts.conversation.setToolResult(call.id, limit.resultJson);
      if (round > parts.maxRounds) return;
    } else {
      yield* runRound(parts, reply, ctx, calls, filler);
      if (ctx.signal.aborted) return;
    }
    messages = parts.conversation.messages.map((m) => ({ ...m }));
    parts.conversation.continueReply();
  }
}

/** One model pass: text goes to the context and out as sentences; function calls are collected in `calls`. */
async function* modelPass(
  parts: ModelRoundsParts,
  reply: Reply,
  ctx: ProviderContext,
  messages: LlmMessage[],
  splitter: SentenceSplitter,
  calls: LlmToolCall[],
): AsyncGenerator<string> {
  const { llm } = parts;
  const tools = parts.tools.any ? parts.tools.offered : undefined;
  for (let attempt = 0; ; attempt++) {
    let used = false;
    try {
      for await (const delta of llm.complete({ messages, tools }, ctx)) {
        used = true;
        if (delta.type === 'tool-call') {
          const { type: _type, ...call } = delta;
          calls.push(call);
          continue;
        }
        reply.timings.llmFirstTokenMs ??= elapsedSince(reply.clock, reply.originMs);
        parts.conversation.appendReplyText(delta.text);
        for (const piece of splitter.push(delta.text)) {
          parts.events?.onBotText?.(piece);
          yield piece;
        }
      }
      return;
    } catch (err) {
      if (used || !mayRetry(err, attempt, ctx.signal)) throw new LlmFailure(err);
      parts
        .log()
        .warn({ err, provider: llm.name, attempt: attempt + 1 }, 'llm request failed before any text; retrying');
      await retryDelay(attempt, ctx.signal);
      if (ctx.signal.aborted) return;
    }
  }
}

/**
 * Runs one pass's calls concurrently and waits for all of them, saying what streaming webhooks ask
 * to say and, once, the filler if they are slow. Each result enters the context when it arrives,
 * even after the reply was cut.
 */
async function* runRound(
  parts: ModelRoundsParts,
  reply: Reply,
  ctx: ProviderContext,
  calls: LlmToolCall[],
  filler: { said: boolean },
): AsyncGenerator<string> {
  const spoken: string[] = [];
  const appended: LlmMessage[] = [];
  let wake: (() => void) | undefined;
  const poke = () => {
    wake?.();
    wake = undefined;
  };
  const onAction = (action: ToolAction) => {
    if (!reply.live) return;
    if (action.type === 'say') {
      spoken.push(action.text);
      // The webhook speaks for itself: no filler on top.
      filler.said = true;
    } else if (action.type === 'append') appended.push(...action.messages);
    else parts.onEndCallAction(reply);
    poke();
  };
  reply.timings.toolsStartedMs ??= elapsedSince(reply.clock, reply.originMs);
  const running: RunningTool[] = calls.map((call) => parts.tools.run(call, reply.abort.signal, onAction));
  for (const run of running) {
    void run.result.then((result) => parts.conversation.setToolResult(run.call.id, result.resultJson));
  }
  let settled = false;
  void Promise.all(running.map((run) => run.result)).then(() => {
    settled = true;
    reply.timings.toolsDoneMs = elapsedSince(reply.clock, reply.originMs);
    poke();
  });
  // The filler is timed on the call's clock: it is about the silence the caller hears.
  const fillerTimer = reply.clock.setTimeout(() => {
    if (settled || filler.said || running.every((run) => run.spec?.noFiller)) return;
    filler.said = true;
    spoken.push(running.find((run) => run.spec?.say)?.spec?.say ?? DEFAULT_FILLER);
    poke();
  }, FILLER_AFTER_MS);
  ctx.signal.addEventListener('abort', poke);
  try {
    for (;;) {
      for (let text = spoken.shift(); text !== undefined; text = spoken.shift()) {
        // Said while the functions run: part of the reply, so the context holds it too.
        yield* say(parts, text);
        if (ctx.signal.aborted) return;
      }
      if (settled || ctx.signal.aborted) break;
      await new Promise<void>((resolve) => {
        wake = resolve;
      });
    }
  } finally {
    reply.clock.clearTimeout(fillerTimer);
    ctx.signal.removeEventListener('abort', poke);
  }
  if (ctx.signal.aborted) return;
  for (const run of running) parts.conversation.setToolResult(run.call.id, (await run.result).resultJson);
  if (appended.length > 0) parts.conversation.messages.push(...appended);
}

/** A phrase of the bot's own inside a reply (a filler, a webhook's `tts:say`). */
async function* say(parts: ModelRoundsParts, text: string): AsyncGenerator<string> {
  parts.conversation.appendReplyPhrase(text);
  parts.events?.onBotText?.(text);
  yield text;
}

/** Marks an error as the LLM's, so the apology can still use the configured TTS. */
export class LlmFailure extends Error {
  constructor(override readonly cause: unknown) {
    super(cause instanceof Error ? cause.message : String(cause));
  }
}
