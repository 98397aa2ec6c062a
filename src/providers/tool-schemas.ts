import { z } from 'zod';

const openAiStyleTool = z.object({
  type: z.literal('function'),
  function: z.object({
    name: z.string().min(1),
    description: z.string().optional(),
    parameters: z.record(z.string(), z.unknown()).optional(),
  }),
});

/**
 * A tool written in the OpenAI shape (`{type:"function", function:{name, description, parameters}}`),
 * which is how bot configurations usually carry them, as its parts; undefined for any other shape,
 * which the non-OpenAI adapters then pass through as already being in their vendor's format.
 */
export function openAiToolFunction(
  tool: Record<string, unknown>,
): { name: string; description?: string; parameters?: Record<string, unknown> } | undefined {
  const parsed = openAiStyleTool.safeParse(tool);
  return parsed.success ? parsed.data.function : undefined;
}

/**
 * OpenAI function-format tools as Gemini's `tools` entry (one `{functionDeclarations}`, for the
 * text API and Gemini Live alike); entries of another shape are taken as Gemini's own.
 */
export function toGeminiTools(tools: Array<Record<string, unknown>>): Array<Record<string, unknown>> {
  const declarations: Array<Record<string, unknown>> = [];
  const native: Array<Record<string, unknown>> = [];
  for (const tool of tools) {
    const fn = openAiToolFunction(tool);
    if (fn)
      declarations.push({
        name: fn.name,
        ...(fn.description ? { description: fn.description } : {}),
        ...(fn.parameters ? { parameters: fn.parameters } : {}),
      });
    else native.push(tool);
  }
  return [...(declarations.length > 0 ? [{ functionDeclarations: declarations }] : []), ...native];
}
