import { afterEach, expect } from 'vitest';
import type { LlmDelta, LlmMessage, LlmProvider, LlmRequest, LlmToolCall } from '../../src/providers/types.js';
import { type RunningEmulators, startEmulatorServer } from '../../src/tools/emulators/emulator-server.js';
import type { VendorEmulator } from '../../src/tools/emulators/types.js';
import { context, textOf } from './provider-kit.js';

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

/** What every vendor's emulator plays in the function-calling tests: a word and two parallel calls, then the results named. */
export function roundScript(apiKey: string) {
  return {
    latencies: { llmFirstTokenMs: 1, llmTokensPerSec: 2000 },
    apiKey,
    replies: [
      {
        text: 'One moment.',
        toolCalls: [
          { name: 'check_table', argumentsJson: '{"people":2}' },
          { name: 'get_hours', argumentsJson: '{}' },
        ],
      },
    ],
    afterToolResults: (results: Array<{ name: string | undefined; content: string }>) =>
      `Results: ${describeResults(results)}`,
  };
}

/**
 * One vendor's function-calling tests: `start()` runs a fresh emulator (made by `emulator` from
 * the round's script) on its own server, closed after the test, and the vendor's adapter pointed
 * at it. What each vendor sends on the wire stays its own test's to check.
 */
export function toolRoundVendor<E extends VendorEmulator>(
  emulator: () => E,
  adapter: (baseUrl: string) => LlmProvider,
): () => Promise<{ vendor: E; llm: LlmProvider; url: string }> {
  let server: RunningEmulators | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });
  return async () => {
    const vendor = emulator();
    server = await startEmulatorServer([vendor]);
    return { vendor, llm: adapter(server.url), url: server.url };
  };
}

/**
 * A round as every vendor must run it: the two calls in the order the model made them, each
 * with its own id, and the model's answer once the results were in. Returns the calls.
 */
export async function expectRound(llm: LlmProvider) {
  const round = await runToolRound(llm);
  expect(round.calls.map((c) => c.name)).toEqual(['check_table', 'get_hours']);
  expect(new Set(round.calls.map((c) => c.id)).size).toBe(2);
  expect(textOf(round.second)).toBe('Results: check_table={"free":true} get_hours={"hours":"12-23"}');
  return round;
}
