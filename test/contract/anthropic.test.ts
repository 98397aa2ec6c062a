import Anthropic from '@anthropic-ai/sdk';
import { afterEach, describe, expect, it } from 'vitest';
import { AnthropicEmulator } from '../../src/tools/emulators/anthropic-emulator.js';
import { API_KEY, CONTRACT_LATENCIES, type Vendors, startVendors } from './vendors.js';

/**
 * Anthropic's own SDK (`@anthropic-ai/sdk`) against the Anthropic emulator: Messages streaming
 * with the SDK's MessageStream, which checks the event order as it accumulates the message.
 */

const REPLY = 'Sure, a table for two at seven.';
const MODEL = 'claude-haiku-4-5';

let vendors: Vendors | undefined;
afterEach(async () => {
  await vendors?.close();
  vendors = undefined;
});

function client(v: Vendors): Anthropic {
  return new Anthropic({ apiKey: API_KEY, baseURL: v.baseUrl, maxRetries: 0 });
}

describe('@anthropic-ai/sdk against the Anthropic emulator', () => {
  it('streams text deltas and ends with the stop reason and usage', async () => {
    vendors = await startVendors({ replies: [REPLY] });
    const stream = client(vendors).messages.stream({
      model: MODEL,
      max_tokens: 256,
      system: 'You are a receptionist.',
      messages: [{ role: 'user', content: 'A table for two, please.' }],
    });
    const deltas: string[] = [];
    stream.on('text', (delta) => deltas.push(delta));
    const message = await stream.finalMessage();
    expect(deltas.length).toBeGreaterThan(1);
    expect(deltas.join('')).toBe(REPLY);
    expect(message.role).toBe('assistant');
    expect(message.model).toBe(MODEL);
    expect(message.content).toHaveLength(1);
    expect(message.content[0]).toMatchObject({ type: 'text', text: REPLY });
    expect(message.stop_reason).toBe('end_turn');
    expect(message.usage.input_tokens).toBeGreaterThan(0);
    expect(message.usage.output_tokens).toBeGreaterThan(0);

    // The SDK sends its key as a bearer token, not x-api-key; the emulator takes both.
    const recorded = vendors.emulator(AnthropicEmulator).requests.at(-1)!;
    expect(recorded.status).toBe(200);
    expect(recorded.headers.authorization).toBe('[redacted]');
    expect(recorded.headers['anthropic-version']).toBeDefined();
  });

  it('assembles streamed input_json fragments into a tool_use block', async () => {
    const input = { party_size: 2, time: '19:00', name: 'Ada Lovelace' };
    vendors = await startVendors({
      emulators: [
        new AnthropicEmulator({
          latencies: CONTRACT_LATENCIES,
          apiKey: API_KEY,
          replies: [
            { text: 'Booking that now.', toolCalls: [{ name: 'book_table', argumentsJson: JSON.stringify(input) }] },
          ],
        }),
      ],
    });
    const stream = client(vendors).messages.stream({
      model: MODEL,
      max_tokens: 256,
      tools: [
        {
          name: 'book_table',
          description: 'Books a table',
          input_schema: {
            type: 'object',
            properties: { party_size: { type: 'integer' }, time: { type: 'string' }, name: { type: 'string' } },
            required: ['party_size', 'time'],
          },
        },
      ],
      messages: [{ role: 'user', content: 'Book a table for two at seven for Ada Lovelace.' }],
    });
    const jsonDeltas: string[] = [];
    stream.on('inputJson', (partial) => jsonDeltas.push(partial));
    const message = await stream.finalMessage();
    expect(message.stop_reason).toBe('tool_use');
    expect(message.content.map((block) => block.type)).toEqual(['text', 'tool_use']);
    const [text, toolUse] = message.content;
    expect(text?.type === 'text' && text.text).toBe('Booking that now.');
    expect(toolUse?.type).toBe('tool_use');
    if (toolUse?.type !== 'tool_use') return;
    expect(toolUse.name).toBe('book_table');
    expect(toolUse.id).toMatch(/^toolu_/);
    expect(toolUse.input).toEqual(input);
    expect(jsonDeltas.length).toBeGreaterThan(1);
  });

  it('the key as x-api-key (what the adapter sends) is still accepted, and a wrong bearer key is refused', async () => {
    vendors = await startVendors({ replies: [REPLY] });
    const wrong = new Anthropic({ apiKey: 'not-the-key', baseURL: vendors.baseUrl, maxRetries: 0 });
    await expect(
      wrong.messages.create({ model: MODEL, max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] }),
    ).rejects.toMatchObject({ status: 401 });
    const response = await fetch(`${vendors.baseUrl}/v1/messages`, {
      method: 'POST',
      headers: { 'x-api-key': API_KEY, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' },
      body: JSON.stringify({ model: MODEL, max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] }),
    });
    expect(response.status).toBe(200);
  });
});
