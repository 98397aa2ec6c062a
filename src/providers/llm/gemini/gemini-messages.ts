import { z } from 'zod';

/**
 * Gemini `generateContent` / `streamGenerateContent` wire messages (REST, v1beta).
 *
 * Source: Google's public Gemini API REST reference (ai.google.dev/api, "Generating content"):
 * `POST /v1beta/models/{model}:streamGenerateContent?alt=sse` with an `x-goog-api-key` header;
 * every SSE `data:` event is one GenerateContentResponse (docs/providers.md section 9). Objects are loose because
 * Google adds fields (safetyRatings, citationMetadata, ...) that a voice bot does not need.
 */

// ---- request ----

export const textPart = z.looseObject({ text: z.string(), thought: z.boolean().optional() });
export const inlineDataPart = z.looseObject({
  inlineData: z.looseObject({ mimeType: z.string().min(1), data: z.string().min(1) }),
});
export const functionCallPart = z.looseObject({
  functionCall: z.looseObject({
    name: z.string().min(1),
    args: z.record(z.string(), z.unknown()).optional(),
    id: z.string().optional(),
  }),
  /**
   * A thinking model's signature of its reasoning (Gemini 3 puts one on the first function call
   * of every answer with calls). Opaque; the next request must carry it back on the same part, or
   * Gemini 3 refuses the request (ai.google.dev/gemini-api/docs/thought-signatures).
   */
  thoughtSignature: z.string().optional(),
});
export const functionResponsePart = z.looseObject({
  functionResponse: z.looseObject({
    name: z.string().min(1),
    response: z.record(z.string(), z.unknown()),
    id: z.string().optional(),
  }),
});
export const part = z.union([textPart, inlineDataPart, functionCallPart, functionResponsePart]);
export type Part = z.infer<typeof part>;

export const content = z.looseObject({
  role: z.enum(['user', 'model']).optional(),
  parts: z.array(part).min(1),
});
export type Content = z.infer<typeof content>;

export const generationConfig = z.looseObject({
  temperature: z.number().min(0).max(2).optional(),
  maxOutputTokens: z.number().int().min(1).optional(),
  topP: z.number().optional(),
  topK: z.number().optional(),
  stopSequences: z.array(z.string()).optional(),
  candidateCount: z.literal(1).optional(),
});

export const functionDeclaration = z.looseObject({
  name: z
    .string()
    .regex(/^[a-zA-Z_][a-zA-Z0-9_.-]{0,63}$/, 'must start with a letter or _, then up to 63 letters, digits, _ . or -'),
  description: z.string().optional(),
  parameters: z.record(z.string(), z.unknown()).optional(),
});

export const generateContentRequest = z.looseObject({
  contents: z.array(content).min(1),
  systemInstruction: z.looseObject({ role: z.string().optional(), parts: z.array(textPart).min(1) }).optional(),
  generationConfig: generationConfig.optional(),
  tools: z.array(z.looseObject({ functionDeclarations: z.array(functionDeclaration).optional() })).optional(),
  toolConfig: z.unknown().optional(),
  safetySettings: z.array(z.unknown()).optional(),
});
export type GenerateContentRequest = z.infer<typeof generateContentRequest>;

// ---- response ----

export const errorObject = z.looseObject({
  code: z.number().int().optional(),
  message: z.string(),
  status: z.string().optional(),
});

/** One streamed event (or the whole answer of generateContent). */
export const generateContentResponse = z.looseObject({
  candidates: z
    .array(
      z.looseObject({
        content: z
          .looseObject({ role: z.string().optional(), parts: z.array(z.looseObject({})).optional() })
          .optional(),
        finishReason: z.string().optional(),
        index: z.number().int().optional(),
      }),
    )
    .optional(),
  promptFeedback: z.looseObject({ blockReason: z.string().optional() }).optional(),
  usageMetadata: z.looseObject({}).optional(),
  error: errorObject.optional(),
});
export type GenerateContentResponse = z.infer<typeof generateContentResponse>;

/** The body of an HTTP error (google.rpc.Status), also sent as an in-stream event. */
export interface GeminiErrorBody {
  error: { code: number; message: string; status: string; details?: unknown[] };
}
