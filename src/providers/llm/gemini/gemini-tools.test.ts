import { describe, expect, it } from 'vitest';
import { EMULATOR_ENV } from '../../../../test/helpers/provider-kit.js';
import {
  collectDeltas,
  expectRound,
  roundScript,
  runToolRound,
  toolRoundVendor,
} from '../../../../test/helpers/tool-round.js';
import { GeminiEmulator } from '../../../tools/emulators/gemini-emulator.js';
import { createGeminiLlm } from './index.js';

const KEY = 'AIza-test-0123456789';
const start = toolRoundVendor(
  () => new GeminiEmulator(roundScript(KEY)),
  (baseUrl) => createGeminiLlm({ options: {}, apiKey: KEY, serviceOptions: { base_url: baseUrl }, env: EMULATOR_ENV }),
);
type Sent = { contents: Array<{ role: string; parts: unknown[] }>; tools: unknown[] };

describe('Gemini function calling against the emulator', () => {
  it('a round: functionCall parts as separate calls, answered by functionResponse parts matched by name', async () => {
    const { vendor, llm } = await start();
    await expectRound(llm);
    const sent = vendor.requests[1]!.body as Sent;
    expect(sent.tools).toEqual([
      {
        functionDeclarations: [
          {
            name: 'check_table',
            description: 'Whether a table is free',
            parameters: { type: 'object', properties: { people: { type: 'integer' } }, required: ['people'] },
          },
          { name: 'get_hours', description: 'Opening hours', parameters: { type: 'object', properties: {} } },
        ],
      },
    ]);
    // Ids made up for calls Gemini sent without one do not go back to Gemini.
    expect(sent.contents.slice(1)).toEqual([
      {
        role: 'model',
        parts: [
          { text: 'One moment.' },
          { functionCall: { name: 'check_table', args: { people: 2 } } },
          { functionCall: { name: 'get_hours', args: {} } },
        ],
      },
      {
        role: 'user',
        parts: [
          { functionResponse: { name: 'check_table', response: { free: true } } },
          { functionResponse: { name: 'get_hours', response: { hours: '12-23' } } },
        ],
      },
    ]);
  });

  it('a late result joins the others ahead of what the caller said; a result that is not an object is wrapped', async () => {
    const { vendor, llm } = await start();
    await runToolRound(llm, { callerSpokeBetween: true });
    expect(vendor.requests[1]!.status).toBe(200);
    expect((vendor.requests[1]!.body as Sent).contents.at(-1)!.parts.at(-1)).toEqual({ text: 'Monday, please.' });
    await collectDeltas(llm, {
      messages: [
        { role: 'user', content: 'Hi' },
        { role: 'assistant', content: '', toolCalls: [{ id: 'fc_1', name: 'get_hours', argumentsJson: '{}' }] },
        { role: 'tool', toolCallId: 'fc_1', toolName: 'get_hours', content: '"closed"' },
      ],
    });
    const sent = vendor.requests[2]!.body as Sent;
    expect(vendor.requests[2]!.status).toBe(200);
    // Gemini's own ids go back with the call and its response.
    expect(sent.contents.slice(1)).toEqual([
      { role: 'model', parts: [{ functionCall: { name: 'get_hours', args: {}, id: 'fc_1' } }] },
      {
        role: 'user',
        parts: [{ functionResponse: { name: 'get_hours', response: { result: 'closed' }, id: 'fc_1' } }],
      },
    ]);
  });

  it('the emulator refuses function turns out of place, as Gemini does', async () => {
    const { url } = await start();
    const post = async (contents: unknown[]) => {
      const res = await fetch(`${url}/v1beta/models/gemini-2.5-flash:generateContent`, {
        method: 'POST',
        headers: { 'x-goog-api-key': KEY, 'content-type': 'application/json' },
        body: JSON.stringify({ contents }),
      });
      return { status: res.status, message: ((await res.json()) as { error?: { message: string } }).error?.message };
    };
    const call = { role: 'model', parts: [{ functionCall: { name: 'get_hours', args: {} } }] };
    expect(
      await post([{ role: 'user', parts: [{ text: 'Hi' }] }, call, { role: 'user', parts: [{ text: 'Hello?' }] }]),
    ).toEqual({
      status: 400,
      message: 'Please ensure that function response turn comes immediately after a function call turn.',
    });
    const twoResponses = await post([
      { role: 'user', parts: [{ text: 'Hi' }] },
      call,
      {
        role: 'user',
        parts: [
          { functionResponse: { name: 'get_hours', response: {} } },
          { functionResponse: { name: 'get_hours', response: {} } },
        ],
      },
    ]);
    expect(twoResponses.message).toMatch(
      /number of function response parts is equal to the number of function call parts/,
    );
  });
});
