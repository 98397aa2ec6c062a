import type { LlmDelta, LlmMessage, LlmProvider, LlmRequest, LlmToolCall } from '../../src/providers/types.js';
import { context } from './provider-kit.js';

/** Two functions in OpenAI's format, as a bot configuration's `tools` holds them. */
export const ROUND_TOOLS: Array<Record<string, unknown>> = [
  {
    type: 'function',
    function: {
      name: 'check_table',
      description: 'Whether a table is free',
      parameters: { type: 'object', properties: { people: { type: 'integer' } }, required: ['people'] },
    },
  },
  {
    type: 'function',
    function: { name: 'get_hours', description: 'Opening hours', parameters: { type: 'object', properties: {} } },
  },
];

export async function collectDeltas(llm: LlmProvider, request: LlmRequest): Promise<LlmDelta[]> {
  const out: LlmDelta[] = [];
  for await (const delta of llm.complete(request, context())) out.push(delta);
  return out;
}

/**
 * One function-calling round as a call runs it: the model calls (in parallel), the results come
 * back in another order and the model runs again. With `callerSpokeBetween`, the second result
 * reaches the conversation only after the caller said something more (a slow tool, a barge-in).
 * Returns what each pass yielded and the history sent the second time.
 */
export async function runToolRound(
  llm: LlmProvider,
  options: { callerSpokeBetween?: boolean } = {},
): Promise<{
  calls: LlmToolCall[];
  history: LlmMessage[];
  second: LlmDelta[];
}> {
  const opening: LlmMessage[] = [
    { role: 'system', content: 'You take bookings.' },
    { role: 'user', content: 'A table for two, and when are you open?' },
  ];
  const first = await collectDeltas(llm, { messages: opening, tools: ROUND_TOOLS });
  const calls = first.flatMap((d) =>
    d.type === 'tool-call' ? [{ id: d.id, name: d.name, argumentsJson: d.argumentsJson }] : [],
  );
  const text = first.flatMap((d) => (d.type === 'text' ? [d.text] : [])).join('');
  const [a, b] = calls;
  if (!a || !b) throw new Error(`expected two parallel calls, got ${calls.length}`);
  const history: LlmMessage[] = [
    ...opening,
    { role: 'assistant', content: text, toolCalls: calls },
    { role: 'tool', toolCallId: b.id, toolName: b.name, content: '{"hours":"12-23"}' },
    ...(options.callerSpokeBetween ? [{ role: 'user' as const, content: 'Monday, please.' }] : []),
    { role: 'tool', toolCallId: a.id, toolName: a.name, content: '{"free":true}' },
  ];
  const second = await collectDeltas(llm, { messages: history, tools: ROUND_TOOLS });
  return { calls, history, second };
}

/** What the emulators answer once the results are in: the results, named. */
export function describeResults(results: Array<{ name: string | undefined; content: string }>): string {
  return results.map((r) => `${r.name}=${r.content}`).join(' ');
}
