import { z } from 'zod';

/**
 * Anthropic Messages wire messages (docs/providers.md section 3), as sent by the adapter and checked
 * by the emulator. Stream events are matched on `type` (equal to the SSE event name); objects
 * are loose because newer API versions add fields.
 */

export const ANTHROPIC_VERSION = '2023-06-01';

// ---- request ----

export const textBlock = z.looseObject({
  type: z.literal('text'),
  text: z.string().min(1, 'text content blocks must be non-empty'),
});
export const imageBlock = z.looseObject({
  type: z.literal('image'),
  source: z.looseObject({
    type: z.literal('base64'),
    media_type: z.enum(['image/jpeg', 'image/png', 'image/gif', 'image/webp']),
    data: z.string().min(1),
  }),
});
export const toolUseBlock = z.looseObject({
  type: z.literal('tool_use'),
  id: z.string().min(1),
  name: z.string().min(1),
  input: z.record(z.string(), z.unknown()),
});
export const toolResultBlock = z.looseObject({
  type: z.literal('tool_result'),
  tool_use_id: z.string().min(1),
  content: z.union([z.string(), z.array(z.union([textBlock, imageBlock]))]).optional(),
  is_error: z.boolean().optional(),
});
export const contentBlock = z.discriminatedUnion('type', [textBlock, imageBlock, toolUseBlock, toolResultBlock]);
export type ContentBlock = z.infer<typeof contentBlock>;

export const message = z.looseObject({
  role: z.enum(['user', 'assistant']),
  content: z.union([z.string(), z.array(contentBlock).min(1)]),
});
export type Message = z.infer<typeof message>;

export const tool = z.looseObject({
  name: z.string().regex(/^[a-zA-Z0-9_-]{1,128}$/, 'must be 1-128 letters, digits, _ or -'),
  description: z.string().optional(),
  input_schema: z.record(z.string(), z.unknown()),
});

export const messagesRequest = z.looseObject({
  model: z.string().min(1),
  max_tokens: z.number().int().min(1),
  messages: z.array(message).min(1),
  system: z.union([z.string(), z.array(textBlock)]).optional(),
  temperature: z.number().min(0).max(1).optional(),
  stop_sequences: z.array(z.string()).optional(),
  stream: z.boolean().optional(),
  // A custom tool needs its input_schema; server tools (web search, …) name their `type` instead.
  tools: z.array(z.union([tool, z.looseObject({ type: z.string().min(1), name: z.string().min(1) })])).optional(),
  tool_choice: z.unknown().optional(),
});
export type MessagesRequest = z.infer<typeof messagesRequest>;

// ---- stream events ----

/** Every event first parses as this, then by its `type`; unknown types are skipped. */
export const streamEvent = z.looseObject({ type: z.string() });

export const messageStart = z.looseObject({
  type: z.literal('message_start'),
  message: z.looseObject({ id: z.string().optional(), model: z.string().optional() }),
});

export const contentBlockStart = z.looseObject({
  type: z.literal('content_block_start'),
  index: z.number().int().min(0),
  content_block: z.looseObject({
    type: z.string(),
    id: z.string().optional(),
    name: z.string().optional(),
    input: z.record(z.string(), z.unknown()).optional(),
  }),
});

export const contentBlockDelta = z.looseObject({
  type: z.literal('content_block_delta'),
  index: z.number().int().min(0),
  delta: z.discriminatedUnion('type', [
    z.looseObject({ type: z.literal('text_delta'), text: z.string() }),
    z.looseObject({ type: z.literal('input_json_delta'), partial_json: z.string() }),
    // Thinking, signatures and citations are not spoken; recognised so they are not "unknown".
    z.looseObject({ type: z.enum(['thinking_delta', 'signature_delta', 'citations_delta']) }),
  ]),
});

export const contentBlockStop = z.looseObject({
  type: z.literal('content_block_stop'),
  index: z.number().int().min(0),
});

export const messageDelta = z.looseObject({
  type: z.literal('message_delta'),
  delta: z.looseObject({ stop_reason: z.string().nullish() }),
});

export const errorEvent = z.looseObject({
  type: z.literal('error'),
  error: z.looseObject({ type: z.string(), message: z.string() }),
});

/** The body of an HTTP error, and the data of the in-stream `error` event. */
export interface AnthropicErrorBody {
  type: 'error';
  error: { type: string; message: string };
}
