import { z } from 'zod';

/**
 * OpenAI Chat Completions wire messages (docs/providers.md section 2), as sent by the adapter and
 * checked by the emulator. Objects are loose: vendors add fields, and parsers must ignore them.
 */

// ---- request ----

export const textPart = z.looseObject({ type: z.literal('text'), text: z.string() });
export const imageUrlPart = z.looseObject({
  type: z.literal('image_url'),
  image_url: z.looseObject({ url: z.string().min(1), detail: z.enum(['auto', 'low', 'high']).optional() }),
});
const userPart = z.discriminatedUnion('type', [
  textPart,
  imageUrlPart,
  z.looseObject({ type: z.literal('input_audio'), input_audio: z.unknown() }),
]);

export const toolCall = z.looseObject({
  id: z.string().min(1),
  type: z.literal('function'),
  function: z.looseObject({ name: z.string().min(1), arguments: z.string() }),
});

export const chatMessage = z.discriminatedUnion('role', [
  z.looseObject({ role: z.enum(['system', 'developer']), content: z.union([z.string(), z.array(textPart)]) }),
  z.looseObject({ role: z.literal('user'), content: z.union([z.string(), z.array(userPart).min(1)]) }),
  z.looseObject({
    role: z.literal('assistant'),
    content: z.union([z.string(), z.array(textPart), z.null()]).optional(),
    tool_calls: z.array(toolCall).optional(),
  }),
  z.looseObject({
    role: z.literal('tool'),
    tool_call_id: z.string().min(1),
    content: z.union([z.string(), z.array(textPart)]),
  }),
]);
export type ChatMessage = z.infer<typeof chatMessage>;

export const functionTool = z.looseObject({
  type: z.literal('function'),
  function: z.looseObject({
    name: z.string().regex(/^[a-zA-Z0-9_-]{1,64}$/, 'must be 1-64 letters, digits, _ or -'),
    description: z.string().optional(),
    parameters: z.record(z.string(), z.unknown()).optional(),
  }),
});

export const chatCompletionRequest = z.looseObject({
  model: z.string().min(1),
  messages: z.array(chatMessage).min(1),
  stream: z.boolean().nullish(),
  stream_options: z.looseObject({ include_usage: z.boolean().optional() }).nullish(),
  temperature: z.number().min(0).max(2).nullish(),
  max_tokens: z.number().int().min(1).nullish(),
  max_completion_tokens: z.number().int().min(1).nullish(),
  tools: z.array(functionTool).nullish(),
  tool_choice: z.unknown().optional(),
  n: z.literal(1).nullish(),
});
export type ChatCompletionRequest = z.infer<typeof chatCompletionRequest>;

// ---- response (streamed) ----

/** One fragment of a streamed tool call; only the first for an index carries id and name. */
export const toolCallDelta = z.looseObject({
  index: z.number().int().min(0).optional(),
  id: z.string().nullish(),
  type: z.string().nullish(),
  function: z.looseObject({ name: z.string().nullish(), arguments: z.string().nullish() }).nullish(),
});

export const chunkChoice = z.looseObject({
  index: z.number().int().optional(),
  delta: z
    .looseObject({
      role: z.string().nullish(),
      content: z.string().nullish(),
      tool_calls: z.array(toolCallDelta).nullish(),
    })
    .nullish(),
  finish_reason: z.string().nullish(),
});

export const errorObject = z.looseObject({
  message: z.string(),
  type: z.string().nullish(),
  param: z.string().nullish(),
  code: z.union([z.string(), z.number()]).nullish(),
});

/**
 * A `data:` payload: a `chat.completion.chunk`, or an error once streaming has begun. `choices`
 * is optional because compatible servers differ (the usage chunk has `[]`).
 */
export const streamPayload = z.looseObject({
  id: z.string().nullish(),
  choices: z.array(chunkChoice).nullish(),
  usage: z.looseObject({ prompt_tokens: z.number().optional(), completion_tokens: z.number().optional() }).nullish(),
  // llama.cpp and Ollama style servers may send a bare string.
  error: z.union([errorObject, z.string()]).nullish(),
});
export type StreamPayload = z.infer<typeof streamPayload>;

/** The error body of an HTTP error (before streaming starts), and of the in-stream error chunk. */
export interface OpenAiErrorBody {
  error: { message: string; type: string; param: string | null; code: string | null };
}

/** The `data:` value that ends the stream. */
export const DONE_SENTINEL = '[DONE]';
